package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/snapshot/pack"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

func newTasksCommand() *cli.Command {
	var faults []string
	for _, f := range synth.Faults {
		faults = append(faults, fmt.Sprintf("%s (%s)", f, synth.FaultDescriptions[f]))
	}
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
					"         aa-grade tasks validate --stats demo",
				Flags: []cli.Flag{&cli.BoolFlag{Name: "json", Sources: env("json"), Usage: "print JSON"},
					&cli.BoolFlag{Name: "stats", Sources: env("stats"), Usage: "also give each task's statistics, to compare with the real tasks (reads every table once more)"}},
				Action: runTasksValidate,
			},
			{
				Name:  "synth",
				Usage: "generate a complete task in the real formats, with one injected fault",
				Description: "Faults: " + strings.Join(faults, ", ") + ".\n\n" +
					"Example: aa-grade tasks synth --out ./Scenario-1000 --fault oom --seed 7",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Sources: env("out"), Usage: "the task folder to create (must not exist or be empty)"},
					&cli.StringFlag{Name: "fault", Sources: env("fault"), Usage: "fault to inject, or two joined by + (default: drawn by the seed from the real benchmark's mix)"},
					&cli.Uint64Flag{Name: "seed", Value: 1, Sources: env("seed"), Usage: "same seed, same task"},
					&cli.StringFlag{Name: "size", Value: "small", Sources: env("size"), Usage: "small, or large (hundreds of MB of TSV, for benchmarks)"},
				},
				Action: runTasksSynth,
			},
			{
				Name:        "pack",
				Usage:       "write task folders as a dataset in the Hub layout (sre/data.jsonl), refusing tasks that fail validation",
				ArgsUsage:   "TASK...",
				Description: "Example: aa-grade tasks pack --out ./my-dataset ./Scenario-1000 ./Scenario-1001",
				Flags: []cli.Flag{
					&cli.StringFlag{Name: "out", Required: true, Sources: env("out"), Usage: "the dataset folder to create (must not exist or be empty)"},
					&cli.StringFlag{Name: "split", Value: "public", Sources: env("split"), Usage: "source_split of the rows: public or private"},
				},
				Action: runTasksPack,
			},
		},
	}
}

// validateSpecs opens each spec and validates all its tasks.
func validateSpecs(ctx context.Context, cmd *cli.Command, specs []string) ([]validate.Report, []data.Task, error) {
	var reports []validate.Report
	var tasks []data.Task
	for _, spec := range specs {
		ds, err := data.Open(ctx, spec, data.OpenOptions{Hub: hubConfig()})
		if err != nil {
			return nil, nil, datasetError(err)
		}
		for _, w := range ds.Warnings {
			printLine(cmd.Root().ErrWriter, "warning: %s", w)
		}
		for _, t := range ds.Tasks {
			reports = append(reports, validate.Task(t))
			tasks = append(tasks, t)
		}
	}
	return reports, tasks, nil
}

func runTasksValidate(ctx context.Context, cmd *cli.Command) error {
	if cmd.NArg() == 0 {
		return usageErrorf("tasks validate needs at least one PATH (a task folder, a dataset folder, hf:... or demo)")
	}
	reports, tasks, err := validateSpecs(ctx, cmd, cmd.Args().Slice())
	if err != nil {
		return err
	}
	if cmd.Bool("stats") {
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
	stdout := cmd.Root().Writer
	if cmd.Bool("json") {
		if err := printJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		renderReports(stdout, reports)
	}
	return failedTasks(reports)
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
		return badResult(fmt.Errorf("%d of %d tasks have errors: %s", len(failed), len(reports), strings.Join(failed, ", ")))
	}
	return nil
}

func renderReports(w io.Writer, reports []validate.Report) {
	for _, r := range reports {
		counts := map[string]int{}
		for _, f := range r.Findings {
			counts[f.Level]++
		}
		status := "ok"
		if counts[validate.Error] > 0 {
			status = "FAILED"
		}
		printLine(w, "%s: %s (%d errors, %d warnings)", r.Task, status, counts[validate.Error], counts[validate.Warning])
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
			printLine(w, "  stats   alerts: %d files; %s", st.AlertsFiles, strings.Join(names, ", "))
			printLine(w, "  stats   errors: %d signatures, %.1f%% of spans; %d in the first 5 minutes", st.ErrorSignatures, 100*st.TraceErrorShare, len(st.EarlySignatures))
			printLine(w, "  stats   objects: %d dumps, %v objects, %v kinds; %d changed between the first and last dump", st.Dumps, st.ObjectsPerDump, st.KindsPerDump, st.ChangedObjects)
			printLine(w, "  stats   metrics: %d files", st.MetricsFiles)
		}
	}
}

func runTasksSynth(_ context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	size := cmd.String("size")
	if size != "small" && size != "large" {
		return usageErrorf("--size must be small or large, not %q", size)
	}
	fault := cmd.String("fault")
	if fault != "" {
		if _, err := synth.ParseFault(fault); err != nil {
			return usageErrorf("%v", err)
		}
	}
	res, err := synth.Generate(cmd.String("out"), synth.Options{Fault: fault, Seed: cmd.Uint64("seed"), Large: size == "large"})
	if err != nil {
		return err
	}
	fmt.Fprintf(cmd.Root().Writer, "wrote %s: fault %s on %s, root cause %s\n", res.Dir, res.Fault,
		strings.Join(res.Victims, " and "), strings.Join(res.RootCauses, " and "))
	return nil
}

func runTasksPack(ctx context.Context, cmd *cli.Command) error {
	if cmd.NArg() == 0 {
		return usageErrorf("tasks pack needs at least one TASK folder")
	}
	split := cmd.String("split")
	if split != "public" && split != "private" {
		return usageErrorf("--split must be public or private, not %q", split)
	}
	reports, tasks, err := validateSpecs(ctx, cmd, cmd.Args().Slice())
	if err != nil {
		return err
	}
	if err := failedTasks(reports); err != nil {
		renderReports(cmd.Root().ErrWriter, reports)
		return badResult(fmt.Errorf("nothing packed: %w", err))
	}
	if err := pack.Write(cmd.String("out"), tasks, pack.Options{Split: split}); err != nil {
		return err
	}
	fmt.Fprintf(cmd.Root().Writer, "packed %d tasks into %s (sre/data.jsonl and one folder per task)\n", len(tasks), cmd.String("out"))
	return nil
}
