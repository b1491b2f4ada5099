package main

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

func datasetFlag() cli.Flag {
	return &cli.StringFlag{Name: "dataset", Value: data.DefaultSpec, Sources: env("dataset"),
		Usage: "dataset: hf:OWNER/NAME[@REV], a folder in the Hub layout (sre/data.jsonl), a folder of task folders, or one task folder"}
}

func tasksFlag() cli.Flag {
	return &cli.StringSliceFlag{Name: "tasks", Sources: env("tasks"),
		Usage: "only these tasks, comma-separated (Scenario-2 or 2)"}
}

func newDataCommand() *cli.Command {
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
				Flags: []cli.Flag{datasetFlag(), tasksFlag(),
					&cli.IntFlag{Name: "parallel", Value: 8, Sources: env("parallel"), Usage: "files downloaded at once"}, noProgressFlag()},
				Action: runDataPull,
			},
			{
				Name:        "ls",
				Usage:       "list the tasks of a dataset: split, files, bytes, root causes, problems",
				Description: "Example: aa-grade data ls --dataset ./ITBench-AA --json",
				Flags:       []cli.Flag{datasetFlag(), &cli.BoolFlag{Name: "json", Sources: env("json"), Usage: "print JSON"}},
				Action:      runDataLs,
			},
			{
				Name:  "verify",
				Usage: "re-hash every cached file of a Hub dataset; exit 1 naming each missing or corrupt file",
				Description: "Example: aa-grade data verify\n" +
					"         aa-grade data verify --repair",
				Flags: []cli.Flag{datasetFlag(), tasksFlag(),
					&cli.BoolFlag{Name: "repair", Sources: env("repair"), Usage: "download missing and corrupt files again"},
					&cli.BoolFlag{Name: "json", Sources: env("json"), Usage: "print JSON"}},
				Action: runDataVerify,
			},
		},
	}
}

// hubSpecArg reads --dataset as a Hub spec; pull and verify work on the Hub cache only.
func hubSpecArg(cmd *cli.Command) (data.HubSpec, error) {
	spec := cmd.String("dataset")
	if !strings.HasPrefix(spec, "hf:") {
		return data.HubSpec{}, usageErrorf("%s works on Hub datasets (hf:OWNER/NAME[@REV]); %q is not one", cmd.FullName(), spec)
	}
	hs, err := data.ParseHubSpec(spec)
	if err != nil {
		return data.HubSpec{}, usageErrorf("%v", err)
	}
	return hs, nil
}

func noArgs(cmd *cli.Command) error {
	if cmd.NArg() > 0 {
		return usageErrorf("%s takes no arguments, got %q", cmd.FullName(), cmd.Args().Slice())
	}
	return nil
}

func runDataPull(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	spec, err := hubSpecArg(cmd)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	progress := newPullProgress(ctx, stderr, cmd.Bool("no-progress"))
	progress.Start()
	res, err := data.Pull(ctx, hubConfig(), spec, data.PullOptions{Tasks: cmd.StringSlice("tasks"), Parallel: int(cmd.Int("parallel")), Progress: progress.callbacks()})
	progress.Stop()
	if err != nil && ctx.Err() != nil {
		done, total := progress.inCache()
		return &exitError{code: 130, err: fmt.Errorf("interrupted with %d of %d files in the cache; run the same command again to resume", done, total)}
	}
	if err != nil {
		return datasetError(err)
	}
	printLine(stdout, "%s at commit %s", spec, res.Commit) // the commit as the Hub named it
	fmt.Fprintf(stdout, "%d files, %s (%d already cached, %s downloaded)\n", res.Files, humanBytes(res.Bytes), res.Cached, humanBytes(res.Downloaded))
	printLine(stdout, "in %s", res.Dir)
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

func runDataLs(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	ds, err := data.Open(ctx, cmd.String("dataset"), data.OpenOptions{Hub: hubConfig(), IndexOnly: true})
	if err != nil {
		return datasetError(err)
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
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
	if cmd.Bool("json") {
		if err := printJSON(stdout, rows); err != nil {
			return err
		}
	} else {
		renderTaskRows(stdout, rows)
	}
	if problems > 0 {
		return badResult(fmt.Errorf("%d of %d tasks have a problem", problems, len(rows)))
	}
	return nil
}

func renderTaskRows(w io.Writer, rows []taskRow) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tSPLIT\tFILES\tSIZE\tROOT CAUSES\tSTATUS")
	for _, r := range rows {
		status := r.Status
		if r.Problem != "" {
			status += ": " + r.Problem
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%d\t%s\n", termtext.Sanitize(r.Task), termtext.Sanitize(r.Split), r.Files, humanBytes(r.Bytes),
			r.RootCauses, termtext.Sanitize(status))
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

func runDataVerify(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	spec, err := hubSpecArg(cmd)
	if err != nil {
		return err
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	progress := newPullProgress(ctx, stderr, true)
	res, err := data.Verify(ctx, hubConfig(), spec, cmd.Bool("repair"), data.PullOptions{Tasks: cmd.StringSlice("tasks"), Progress: progress.callbacks()})
	if res == nil {
		return datasetError(err)
	}
	if cmd.Bool("json") {
		out := struct {
			Dataset  string         `json:"dataset"`
			Commit   string         `json:"commit"`
			Checked  int            `json:"checked"`
			Bytes    int64          `json:"bytes"`
			Bad      []data.BadFile `json:"bad"`
			Repaired int            `json:"repaired"`
		}{spec.String(), res.Commit, res.Checked, res.Bytes, append([]data.BadFile{}, res.Bad...), res.Repaired}
		if err := printJSON(stdout, out); err != nil {
			return err
		}
	} else {
		printLine(stdout, "%s at commit %s: checked %d files, %s", spec, res.Commit, res.Checked, humanBytes(res.Bytes))
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
		fmt.Fprintf(stdout, "repaired %d files\n", res.Repaired)
		return nil
	}
	if len(res.Bad) > 0 {
		return badResult(fmt.Errorf("%d files missing or corrupt; aa-grade data verify --repair downloads them again", len(res.Bad)))
	}
	return nil
}
