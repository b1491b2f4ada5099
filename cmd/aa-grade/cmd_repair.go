package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/version"
)

// repairOptions are the flags of aa-grade repair.
type repairOptions struct {
	flagsSet
	dataset, model string
}

func (o *repairOptions) Validate() error { return nil }

func newRepairCommand() *cli.Command {
	var opts repairOptions
	return &cli.Command{
		Name:      "repair",
		Usage:     "rebuild a run folder's lost or unreadable run.json from its results and trajectories",
		ArgsUsage: "RUN",
		Description: "Reads back the tasks and repeats (results.jsonl, episodes/), the model and its base URL (the\n" +
			"trajectories' first request), the start and the prompt set (prompts.txt), and writes run.json;\n" +
			"a broken run.json is kept beside as run.json.broken. The dataset is --dataset's (run.json alone\n" +
			"records it), demo when not given and every task is the demo's; a run of builtin/baseline or a\n" +
			"replay, which call no provider, needs --model.\n" +
			"run.json's \"repaired\" names what was not known (the sandbox, the episodes' settings): report,\n" +
			"view, grade, export, analyze and merge read the folder; a resume refuses naming what differs.\n\n" +
			"Example: aa-grade repair runs/opus --dataset hf:ArtificialAnalysis/ITBench-AA",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "dataset", Destination: &opts.dataset, Sources: env("dataset"),
				DefaultText: "demo when every task is the demo's, else it must be given",
				Usage:       "the run's dataset, as run was given it (run.json alone recorded it)"},
			&cli.StringFlag{Name: "model", Destination: &opts.model,
				Usage: "the run's model spec, when the trajectories do not tell it (or tell it wrong)"},
		},
		Action: action(&opts, runRepair),
	}
}

func runRepair(ctx context.Context, opts repairOptions, args []string, con console) error {
	if len(args) != 1 {
		return usageErrorf("repair needs one RUN folder, got %s; see aa-grade repair --help",
			english.Count(len(args), "argument"))
	}
	dir := args[0]
	var broken *runfolder.HeaderError
	switch _, err := runfolder.ReadHeader(dir); {
	case err == nil:
		return usageErrorf("%s: its %s reads: nothing to repair", dir, runfolder.HeaderFile)
	case !errors.As(err, &broken):
		return err
	}
	rb, err := runfolder.Rebuild(dir)
	if err != nil {
		return err
	}
	printSkipped(con.err, rb.Warnings)
	h, told, err := rebuiltHeader(ctx, opts, rb)
	if err != nil {
		return fmt.Errorf("repair %s: %w", dir, err)
	}
	kept, err := runfolder.WriteRebuilt(dir, h)
	if err != nil {
		return err
	}
	if kept != "" {
		printLine(con.err, "kept the broken %s as %s", runfolder.HeaderFile, kept)
	}
	printLine(con.out, "Rebuilt %s/%s: %s x %s, model %s, dataset %s; %s",
		dir, runfolder.HeaderFile, english.Count(len(h.Tasks), "task"), english.Count(h.Repeats, "repeat"),
		h.Model, h.Dataset, told)
	return nil
}

// rebuiltHeader makes run.json of what the folder told and the flags; told says where the
// model and the dataset came from, and what is not known.
func rebuiltHeader(ctx context.Context, opts repairOptions, rb runfolder.Rebuilt) (runfolder.Header, string, error) {
	if len(rb.Tasks) == 0 {
		return runfolder.Header{}, "", badResult(errors.New("no line of " + runfolder.ResultsFile +
			" and no episode folder names a task: nothing to rebuild from"))
	}
	dataset, datasetFrom, err := repairedDataset(ctx, opts.dataset, rb.Tasks)
	if err != nil {
		return runfolder.Header{}, "", err
	}
	h := runfolder.Header{Version: version.Version, Revision: version.Revision, Dataset: dataset,
		Tasks: rb.Tasks, Repeats: rb.Repeats, Model: opts.model, PromptSHA256: rb.PromptSHA256, Started: rb.Started,
		Sandbox: "unknown"}
	from := "the model from --model"
	if spec, base, ok := provider.SpecOf(rb.URL, rb.Model); ok && opts.model == "" {
		h.Model, h.BaseURL = spec, base
		from = "the model from the trajectories' requests to " + base + " (--model names another)"
	}
	if h.Model == "" {
		return h, "", usageErrorf("the trajectories record no model call (builtin/baseline and replays make none): " +
			"name the run's model with --model")
	}
	if rb.Agent {
		h.Agent = &runfolder.AgentInfo{Spec: "unknown"}
	}
	h.Unknown = []string{"sandbox", "max_tokens", "loop", "max_turns", "command_timeout", "reasoning_effort", "prices",
		"judge"}
	if rb.Agent {
		h.Unknown = append(h.Unknown, "agent")
	}
	if rb.PromptSHA256 == "" {
		h.Unknown = append(h.Unknown, "prompt_sha256")
	}
	told := from + ", " + datasetFrom + "; not known: " + strings.Join(h.Unknown, ", ")
	h.Repaired = "rebuilt by aa-grade repair: " + told
	return h, told, nil
}

// repairedDataset is the run's dataset: the one given, else demo when every task is one of
// the demo's (a guess that cannot be undone would be worse than asking: repair refuses a
// folder whose run.json reads). from says where it came from.
func repairedDataset(ctx context.Context, given string, tasks []string) (spec, from string, err error) {
	if given != "" {
		return given, "the dataset from --dataset", nil
	}
	if _, err := data.Open(ctx, data.DemoSpec, data.OpenOptions{Tasks: tasks}); err == nil {
		return data.DemoSpec, "the dataset demo (every task is the demo's; --dataset names another)", nil
	}
	return "", "", usageErrorf("name the run's dataset with --dataset (run.json alone recorded it, and its tasks " +
		"are not all the demo's)")
}
