package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// hubDatasetFlag is --dataset of the commands that work on the Hub cache only.
func hubDatasetFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "dataset", Value: data.DefaultSpec, Destination: dst, Sources: env("dataset"),
		Usage: "a Hub dataset: hf:OWNER/NAME[@REV]"}
}

// hubOptions are the flags of data pull and data verify: a Hub dataset and some of its tasks.
type hubOptions struct {
	flagsSet
	dataset string
	tasks   []string
	spec    data.HubSpec // set by Validate
}

// Validate reads --dataset as a Hub spec.
func (o *hubOptions) Validate() error {
	if !strings.HasPrefix(o.dataset, "hf:") {
		return usageErrorf("--dataset %q: pull and verify work on Hub datasets (hf:OWNER/NAME[@REV]) only", o.dataset)
	}
	var err error
	if o.spec, err = data.ParseHubSpec(o.dataset); err != nil {
		return usageErrorf("--dataset: %w", err)
	}
	return nil
}

// pullOptions are the flags of data pull.
type pullOptions struct {
	hubOptions
	parallel   int
	noProgress bool
}

func (o *pullOptions) Validate() error {
	if o.parallel < 1 {
		return usageErrorf("--parallel %d: must be 1 or more", o.parallel)
	}
	return o.hubOptions.Validate()
}

// verifyOptions are the flags of data verify.
type verifyOptions struct {
	hubOptions
	repair, json bool
}

// lsOptions are the flags of data ls.
type lsOptions struct {
	flagsSet
	dataset string
	json    bool
}

func (o *lsOptions) Validate() error { return nil }

func newDataCommand() *cli.Command {
	var pull pullOptions
	var verify verifyOptions
	var ls lsOptions
	return &cli.Command{
		Name:  "data",
		Usage: "download, list and verify datasets in the Hugging Face cache shared with the Python and JavaScript tools",
		Description: "The cache is huggingface_hub's: HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.\n" +
			"HF_ENDPOINT, HF_TOKEN and HF_HUB_OFFLINE=1 are honoured.",
		Commands: []*cli.Command{
			{
				Name:  "pull",
				Usage: "download a dataset (resumable: run it again after an interruption)",
				Description: "Example: aa-grade data pull\n" +
					"         aa-grade data pull --tasks 2,38 --dataset hf:ArtificialAnalysis/ITBench-AA@main",
				Flags: []cli.Flag{hubDatasetFlag(&pull.dataset), tasksFlag(&pull.tasks),
					&cli.IntFlag{Name: "parallel", Value: 8, Destination: &pull.parallel, Sources: env("pull-parallel"),
						Usage: "files downloaded at once"},
					noProgressFlag(&pull.noProgress)},
				Action: action(&pull, runDataPull),
			},
			{
				Name:        "ls",
				Usage:       "list the tasks of a dataset: split, files, bytes, root causes, problems",
				Description: "Example: aa-grade data ls --dataset ./ITBench-AA --json",
				Flags:       []cli.Flag{datasetFlag(&ls.dataset), jsonFlag(&ls.json, "print JSON")},
				Action:      action(&ls, runDataLs),
			},
			{
				Name:  "verify",
				Usage: "re-hash the cached files of a Hub dataset; exit 1 naming each missing or corrupt file",
				Description: "Without --tasks, the tasks pulled are checked (with the index); --tasks checks those, " +
					"pulled or not.\n\n" +
					"Example: aa-grade data verify\n" +
					"         aa-grade data verify --repair",
				Flags: []cli.Flag{hubDatasetFlag(&verify.dataset), tasksFlag(&verify.tasks),
					&cli.BoolFlag{Name: "repair", Destination: &verify.repair, Sources: env("repair"),
						Usage: "download missing and corrupt files again"},
					jsonFlag(&verify.json, "print JSON")},
				Action: action(&verify, runDataVerify),
			},
		},
	}
}

func runDataPull(ctx context.Context, opts pullOptions, args []string, con console) error {
	if err := noArgs("data pull", args); err != nil {
		return err
	}
	progress := newPullProgress(ctx, con.err, opts.noProgress)
	progress.Start()
	res, err := data.Pull(ctx, hubConfig(), opts.spec,
		data.PullOptions{Tasks: opts.tasks, Parallel: opts.parallel, Progress: progress.tell})
	progress.Stop()
	if err != nil && ctx.Err() != nil {
		done, total := progress.inCache()
		return interrupted(fmt.Errorf("interrupted with %d of %s in the cache; run the same command again to resume", done,
			english.Count(int(total), "file")))
	}
	if err != nil {
		return datasetError(err)
	}
	printLine(con.out, "%s at commit %s", opts.spec, res.Commit) // the commit as the Hub named it
	fmt.Fprintf(con.out, "%s, %s (%d already cached, %s downloaded)\n", english.Count(res.Files, "file"),
		humanBytes(res.Bytes), res.Cached, humanBytes(res.Downloaded))
	printLine(con.out, "in %s", res.Dir)
	return nil
}

// taskRow is one line of `data ls`.
type taskRow struct {
	Task       string `json:"task"`
	Split      string `json:"split"`
	Files      int    `json:"files"`
	Bytes      int64  `json:"bytes"`
	RootCauses int    `json:"root_causes"`
	Status     string `json:"status"` // ok or problem
	Problem    string `json:"problem,omitempty"`
}

func runDataLs(ctx context.Context, opts lsOptions, args []string, con console) error {
	if err := noArgs("data ls", args); err != nil {
		return err
	}
	stdout, stderr := con.out, con.err
	ds, err := openForListing(ctx, opts.dataset, stderr)
	if err != nil {
		return datasetError(err)
	}
	for _, w := range ds.Warnings {
		printLine(stderr, "warning: %s", w)
	}
	rows := make([]taskRow, 0, len(ds.Tasks))
	problems := 0
	for _, t := range ds.Tasks {
		row := taskRow{Task: t.ID, Status: "ok"}
		if t.Row != nil {
			row.Split = t.Row.SourceSplit
		}
		var issues []string
		if gt, err := grader.ParseGroundTruth(t.GroundTruth); err != nil {
			issues = append(issues, err.Error())
		} else {
			row.RootCauses = gt.RootCauseSets()
		}
		if t.Dir == "" {
			issues = append(issues, "snapshot not downloaded")
		} else if row.Files, row.Bytes, err = folderSize(t.Dir); err != nil {
			issues = append(issues, err.Error())
		}
		if len(issues) > 0 {
			row.Status, row.Problem = "problem", strings.Join(issues, "; ")
			problems++
		}
		rows = append(rows, row)
	}
	if opts.json {
		if err := printJSON(stdout, rows); err != nil {
			return err
		}
	} else {
		renderTaskRows(stdout, rows)
	}
	if problems > 0 {
		return badResult(fmt.Errorf("%s with a problem (of %d)", english.Count(problems, "task"), len(rows)))
	}
	return nil
}

// openForListing opens the dataset's index; when the Hub cannot be reached it lists what the
// cache holds instead, as HF_HUB_OFFLINE=1 would, saying so (the Hub's error is kept when the
// cache holds nothing of it).
func openForListing(ctx context.Context, spec string, stderr io.Writer) (*data.Dataset, error) {
	cfg := hubConfig()
	ds, err := data.Open(ctx, spec, data.OpenOptions{Hub: cfg, IndexOnly: true})
	if !errors.Is(err, hub.ErrUnreachable) || cfg.Offline {
		return ds, err
	}
	cfg.Offline = true
	cached, cacheErr := data.Open(ctx, spec, data.OpenOptions{Hub: cfg, IndexOnly: true})
	if cacheErr != nil {
		return nil, err
	}
	printLine(stderr, "warning: %v; listing the local cache", err)
	return cached, nil
}

func renderTaskRows(w io.Writer, rows []taskRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSPLIT\tFILES\tSIZE\tROOT CAUSES\tSTATUS")
	for _, r := range rows {
		status := r.Status
		if r.Problem != "" {
			status += ": " + r.Problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", termtext.Sanitize(r.Task), termtext.Sanitize(r.Split), r.Files,
			humanBytes(r.Bytes), r.RootCauses, termtext.Sanitize(status))
	}
	tw.Flush()
}

// folderSize counts the files of a snapshot folder (following the cache's links) and their
// bytes; the ground truth does not count, as the agent never sees it.
func folderSize(dir string) (int, int64, error) {
	files, total := 0, int64(0)
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == data.GroundTruthFile {
			return err
		}
		info, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		files++
		total += info.Size()
		return nil
	})
	return files, total, err
}

func runDataVerify(ctx context.Context, opts verifyOptions, args []string, con console) error {
	if err := noArgs("data verify", args); err != nil {
		return err
	}
	spec, stdout := opts.spec, con.out
	progress := newPullProgress(ctx, con.err, true)
	res, err := data.Verify(ctx, hubConfig(), spec, opts.repair,
		data.PullOptions{Tasks: opts.tasks, Progress: progress.tell})
	if errors.Is(err, data.ErrRepairOffline) {
		return fmt.Errorf("%w (HF_HUB_OFFLINE is set): --repair needs the network", data.ErrOffline)
	}
	if res == nil {
		return datasetError(err)
	}
	if opts.json {
		out := struct {
			Dataset   string         `json:"dataset"`
			Commit    string         `json:"commit"`
			Checked   int            `json:"checked"`
			Bytes     int64          `json:"bytes"`
			NotPulled []string       `json:"not_pulled"`
			Bad       []data.BadFile `json:"bad"`
			Repaired  int            `json:"repaired"`
		}{spec.String(), res.Commit, res.Checked, res.Bytes, append([]string{}, res.NotPulled...),
			append([]data.BadFile{}, res.Bad...), res.Repaired}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printLine(stdout, "%s at commit %s: checked %s, %s", spec, res.Commit, english.Count(res.Checked, "file"),
			humanBytes(res.Bytes))
		if n := len(res.NotPulled); n > 0 {
			fmt.Fprintf(stdout, "%s never pulled, not checked (data pull --tasks fetches them; data verify --tasks "+
				"checks them)\n", english.Count(n, "task"))
		}
		for _, b := range res.Bad {
			line := fmt.Sprintf("%s: %s", b.Problem, b.Path)
			if b.Detail != "" {
				line += " (" + b.Detail + ")"
			}
			printLine(stdout, "%s", line)
		}
	}
	if err != nil {
		return datasetError(err)
	}
	if res.Repaired > 0 {
		fmt.Fprintf(stdout, "repaired %s\n", english.Count(res.Repaired, "file"))
		return nil
	}
	if len(res.Bad) > 0 {
		return badResult(fmt.Errorf("%s missing or corrupt; aa-grade data verify --repair downloads them again",
			english.Count(len(res.Bad), "file")))
	}
	return nil
}
