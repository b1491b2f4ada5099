package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/workpool"
	"github.com/aa-grade/aa-grade/snapshot/pack"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// validateOptions are the flags of tasks validate.
type validateOptions struct {
	flagsSet
	json, stats, duplicates, difficulty bool
	against, sandbox                    string
}

func (o *validateOptions) Validate() error { return validSandbox(o.sandbox) }

// synthOptions are the flags of tasks synth.
type synthOptions struct {
	flagsSet
	out, fault, size string
	seed             uint64
}

func (o *synthOptions) Validate() error {
	if o.size != "small" && o.size != "large" {
		return usageErrorf("--size %q: must be small or large", o.size)
	}
	if o.fault != "" {
		if _, err := synth.ParseFault(o.fault); err != nil {
			return usageErrorf("--fault %q: %w%s", o.fault, err, didYouMean(o.fault, synth.Faults))
		}
	}
	return checkNewFolder("out", o.out)
}

// packOptions are the flags of tasks pack.
type packOptions struct {
	flagsSet
	out, split string
}

func (o *packOptions) Validate() error {
	if !data.ValidSplit(o.split) {
		return usageErrorf("--split %q: must be public or private", o.split)
	}
	return checkNewFolder("out", o.out)
}

func newTasksCommand() *cli.Command {
	var faults []string
	for _, f := range synth.Faults {
		faults = append(faults, fmt.Sprintf("%s (%s)", f, synth.FaultDescriptions[f]))
	}
	var validateOpts validateOptions
	var synthOpts synthOptions
	var packOpts packOptions
	return &cli.Command{
		Name:  "tasks",
		Usage: "validate, generate and pack benchmark tasks (for dataset authors)",
		Commands: []*cli.Command{
			{
				Name:      "validate",
				Usage:     "check that tasks are well-formed and answerable; exit 1 when any has an error",
				ArgsUsage: "PATH...",
				Description: "PATH is a task folder, a dataset folder, hf:OWNER/NAME[@REV] or demo.\n\n" +
					"Example: aa-grade tasks validate ./my-new-task\n" +
					"         aa-grade tasks validate --json hf:ArtificialAnalysis/ITBench-AA\n" +
					"         aa-grade tasks validate --stats demo\n" +
					"         aa-grade tasks validate --against hf:ArtificialAnalysis/ITBench-AA ./held-out\n" +
					"         aa-grade tasks validate --difficulty ./held-out",
				Flags: []cli.Flag{jsonFlag(&validateOpts.json, "print JSON"),
					&cli.BoolFlag{Name: "stats", Destination: &validateOpts.stats,
						Usage: "also give each task's statistics, to compare with the real tasks (reads every table once more)"},
					&cli.BoolFlag{Name: "duplicates", Destination: &validateOpts.duplicates,
						Usage: "also compare the tasks with each other, listing near-duplicates (reads every task once more)"},
					&cli.StringFlag{Name: "against", Destination: &validateOpts.against,
						Usage: "also compare each task with every task of this dataset (a folder, hf:OWNER/NAME[@REV] or demo); " +
							"implies --duplicates"},
					&cli.BoolFlag{Name: "difficulty", Destination: &validateOpts.difficulty,
						Usage: "also run the naive solvers and builtin/baseline (in the sandbox) on each task: a task one of them " +
							"solves is a warning naming the evidence it keyed on"},
					sandboxFlag(&validateOpts.sandbox)},
				Action: action(&validateOpts, runTasksValidate),
			},
			{
				Name:  "synth",
				Usage: "generate a complete task in the real formats, with one injected fault",
				Description: "Faults: " + strings.Join(faults, ", ") + ".\n\n" +
					"Example: aa-grade tasks synth --out ./Scenario-1000 --fault oom --seed 7",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Destination: &synthOpts.out,
						Usage: "the task folder to create (must not exist or be empty)"},
					&cli.StringFlag{Name: "fault", Destination: &synthOpts.fault,
						DefaultText: "drawn by the seed from the real benchmark's mix", Usage: "fault to inject, or two joined by +"},
					&cli.Uint64Flag{Name: "seed", Value: 1, Destination: &synthOpts.seed, Usage: "same seed, same task"},
					&cli.StringFlag{Name: "size", Value: "small", Destination: &synthOpts.size,
						Usage: "small, or large (hundreds of MB of TSV, for benchmarks)"},
				},
				Action: action(&synthOpts, runTasksSynth),
			},
			{
				Name: "pack",
				Usage: "write task folders as a dataset in the Hub layout (sre/data.jsonl), refusing tasks that " +
					"fail validation",
				ArgsUsage:   "TASK...",
				Description: "Example: aa-grade tasks pack --out ./my-dataset ./Scenario-1000 ./Scenario-1001",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Destination: &packOpts.out,
						Usage: "the dataset folder to create (must not exist or be empty)"},
					&cli.StringFlag{Name: "split", Value: data.SplitPublic, Destination: &packOpts.split,
						Usage: "source_split of the rows: public or private"},
				},
				Action: action(&packOpts, runTasksPack),
			},
		},
	}
}

// validateSpecs opens each spec and validates all its tasks.
func validateSpecs(ctx context.Context, warnings io.Writer, specs []string) ([]validate.Report, []data.Task, error) {
	var reports []validate.Report
	var tasks []data.Task
	for _, spec := range specs {
		ds, err := data.Open(ctx, spec, data.OpenOptions{Hub: hubConfig()})
		if errors.Is(err, data.ErrNotDataset) && validate.LooksLikeTask(spec) {
			// A task folder without its answer key: a finding of the task, not a wrong path.
			ds, err = &data.Dataset{Spec: spec, Tasks: []data.Task{{ID: filepath.Base(filepath.Clean(spec)), Dir: spec}}}, nil
		}
		if err != nil {
			return nil, nil, datasetError(err)
		}
		for _, w := range ds.Warnings {
			printLine(warnings, "warning: %s", w)
		}
		for _, t := range ds.Tasks {
			reports = append(reports, validate.Task(t))
			tasks = append(tasks, t)
		}
	}
	return reports, tasks, nil
}

func runTasksValidate(ctx context.Context, opts validateOptions, args []string, con console) error {
	if len(args) == 0 {
		return usageErrorf("tasks validate needs at least one PATH (a task folder, a dataset folder, hf:... or demo)")
	}
	reports, tasks, err := validateSpecs(ctx, con.err, args)
	if err != nil {
		return err
	}
	if opts.stats {
		for i, t := range tasks {
			if t.Dir == "" {
				continue
			}
			st, err := validate.TaskStats(t.Dir)
			if err != nil {
				return fmt.Errorf("statistics of %s: %w", t.ID, err)
			}
			reports[i].Stats = st
		}
	}
	if opts.difficulty {
		if err := addDifficulty(ctx, reports, tasks, opts.sandbox); err != nil {
			return err
		}
	}
	if opts.duplicates || opts.against != "" {
		if err := addSimilarities(ctx, reports, tasks, opts.against, con.err); err != nil {
			return err
		}
	}
	stdout := con.out
	if opts.json {
		if err := printJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		renderReports(stdout, reports, columns(stdout))
	}
	return failedTasks(reports)
}

// addSimilarities fingerprints the tasks, and those of the dataset against when named, and
// adds their near-duplicates and nearest tasks to the reports; the demo's tasks are the
// background.
func addSimilarities(
	ctx context.Context,
	reports []validate.Report,
	tasks []data.Task,
	against string,
	warnings io.Writer,
) error {
	given, err := fingerprints(ctx, tasks, "")
	if err != nil {
		return err
	}
	var others []*validate.Fingerprint
	if against != "" {
		ds, err := data.Open(ctx, against, data.OpenOptions{Hub: hubConfig()})
		if err != nil {
			return datasetError(err)
		}
		for _, w := range ds.Warnings {
			printLine(warnings, "warning: %s", w)
		}
		if others, err = fingerprints(ctx, ds.Tasks, " of "+against); err != nil {
			return err
		}
	}
	background, err := demoFingerprints(ctx)
	if err != nil {
		return err
	}
	validate.AddSimilarities(reports, validate.Similarities(given, others, background))
	return nil
}

// demoFingerprints are the demo's tasks, whose features count in how rare a feature is
// (validate.Similarities), so that tasks compared with few others still weigh what every
// task has as common.
func demoFingerprints(ctx context.Context) ([]*validate.Fingerprint, error) {
	demo, err := data.Open(ctx, "demo", data.OpenOptions{})
	if err != nil {
		return nil, fmt.Errorf("open the demo, the background of the comparison: %w", err)
	}
	return fingerprints(ctx, demo.Tasks, " of the background")
}

// fingerprints reads the tasks with folders, a few at once, naming each by its id and suffix.
func fingerprints(ctx context.Context, tasks []data.Task, suffix string) ([]*validate.Fingerprint, error) {
	out := make([]*validate.Fingerprint, len(tasks))
	errs := make([]error, len(tasks))
	indexes := make([]int, len(tasks))
	for i := range indexes {
		indexes[i] = i
	}
	workpool.Run(ctx, runtime.GOMAXPROCS(0), indexes, func(i int) {
		if tasks[i].Dir != "" {
			out[i], errs[i] = validate.FingerprintTask(tasks[i].ID+suffix, tasks[i].Dir)
		}
	})
	if err := cmp.Or(ctx.Err(), errors.Join(errs...)); err != nil {
		return nil, err
	}
	return slices.DeleteFunc(out, func(fp *validate.Fingerprint) bool { return fp == nil }), nil
}

// failedTasks is the error for reports with errors, naming the tasks.
func failedTasks(reports []validate.Report) error {
	var failed []string
	for _, r := range reports {
		if r.Errors() > 0 {
			failed = append(failed, r.Task)
		}
	}
	if len(failed) > 0 {
		return badResult(fmt.Errorf("%s with errors (of %d): %s", english.Count(len(failed), "task"), len(reports),
			strings.Join(failed, ", ")))
	}
	return nil
}

// renderReports prints each task's findings and statistics, each line wrapped to a terminal
// cols wide (0: any width).
func renderReports(out io.Writer, reports []validate.Report, cols int) {
	var b bytes.Buffer
	w := &b
	for _, r := range reports {
		counts := map[string]int{}
		for _, f := range r.Findings {
			counts[f.Level]++
		}
		status := "ok"
		if counts[validate.Error] > 0 {
			status = "FAILED"
		}
		printLine(w, "%s: %s (%s, %s)", r.Task, status, english.Count(counts[validate.Error], "error"),
			english.Count(counts[validate.Warning], "warning"))
		for _, f := range r.Findings {
			where := f.File
			if f.Line > 0 {
				where += fmt.Sprintf(":%d", f.Line)
			}
			if where != "" {
				where += ": "
			}
			printLine(w, "  %-7s %-15s %s%s", f.Level, f.Code, where, f.Message)
		}
		if st := r.Stats; st != nil {
			names := make([]string, 0, len(st.AlertNames))
			for name, n := range st.AlertNames {
				names = append(names, fmt.Sprintf("%s (%d)", name, n))
			}
			sort.Strings(names)
			printLine(w, "  stats   alerts: %s; %s", english.Count(st.AlertsFiles, "file"), strings.Join(names, ", "))
			printLine(w, "  stats   errors: %s, %.1f%% of spans; %d in the first 5 minutes",
				english.Count(st.ErrorSignatures, "signature"), 100*st.TraceErrorShare, len(st.EarlySignatures))
			printLine(w, "  stats   objects: %s, %v objects, %v kinds; %d changed between the first and last dump",
				english.Count(st.Dumps, "dump"), st.ObjectsPerDump, st.KindsPerDump, st.ChangedObjects)
			printLine(w, "  stats   metrics: %s", english.Count(st.MetricsFiles, "file"))
		}
	}
	fitText(out, b.String(), cols)
}

func runTasksSynth(_ context.Context, opts synthOptions, args []string, con console) error {
	if err := noArgs("tasks synth", args); err != nil {
		return err
	}
	res, err := synth.Generate(opts.out, synth.Options{Fault: opts.fault, Seed: opts.seed, Large: opts.size == "large"})
	if err != nil {
		return err
	}
	fmt.Fprintf(con.out, "wrote %s: fault %s on %s, root cause %s\n", res.Dir, res.Fault,
		strings.Join(res.Victims, " and "), strings.Join(res.RootCauses, " and "))
	return nil
}

func runTasksPack(ctx context.Context, opts packOptions, args []string, con console) error {
	if len(args) == 0 {
		return usageErrorf("tasks pack needs at least one TASK folder")
	}
	reports, tasks, err := validateSpecs(ctx, con.err, args)
	if err != nil {
		return err
	}
	if err := failedTasks(reports); err != nil {
		renderReports(con.err, reports, columns(con.err))
		return fmt.Errorf("nothing packed: %w", err)
	}
	if err := pack.Write(opts.out, tasks, pack.Options{Split: opts.split}); err != nil {
		return err
	}
	fmt.Fprintf(con.out, "packed %s into %s (sre/data.jsonl and one folder per task)\n", english.Count(len(tasks), "task"),
		opts.out)
	return nil
}
