package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

func newRunCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a model on every task x repeat of a dataset, in a sandbox, and grade it",
		Description: "Running again with the same --out resumes: finished episodes are kept, failed ones run again.\n\n" +
			"Example: aa-grade run --dataset demo --model builtin/baseline\n" +
			"         aa-grade run --model anthropic/claude-opus-4-7 --reasoning-effort max --out runs/opus",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Sources: env("model"),
				Usage: "openai/MODEL, anthropic/MODEL, openrouter/ORG/MODEL, openai-api/PROVIDER/MODEL or builtin/baseline"},
			datasetFlag(), tasksFlag(),
			&cli.IntFlag{Name: "repeats", Value: 3, Sources: env("repeats"), Usage: "episodes per task"},
			&cli.IntFlag{Name: "max-turns", Value: harness.DefaultMaxTurns, Sources: env("max_turns"), Usage: "model calls per episode"},
			&cli.IntFlag{Name: "parallel", Value: 4, Sources: env("parallel"), Usage: "episodes at once"},
			&cli.StringFlag{Name: "sandbox", Value: sandbox.NameAuto, Sources: env("sandbox"), Usage: "auto, bwrap, landlock or none (no isolation)"},
			&cli.StringFlag{Name: "out", Sources: env("out"), Usage: "the run folder (default runs/<model>-<time>)"},
			&cli.DurationFlag{Name: "command-timeout", Value: sandbox.DefaultCommandTimeout, Sources: env("command_timeout"), Usage: "per shell command"},
			&cli.StringFlag{Name: "prompt-file", Sources: env("prompt_file"),
				Usage: "replaces the task prompt; {{workdir}}, {{output_path}} and {{python_packages}} are filled in"},
			&cli.StringFlag{Name: "reasoning-effort", Sources: env("reasoning_effort"), Usage: "the provider's reasoning effort (low, medium, high, max, ...)"},
			&cli.IntFlag{Name: "max-tokens", Sources: env("max_tokens"), Usage: "output tokens per call"},
			&cli.IntFlag{Name: "context-window", Sources: env("context_window"), Usage: "tokens; the history is summarised at 70% (0: never)"},
		},
		Action: runRun,
	}
}

func runRun(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	if cmd.Int("repeats") < 1 || cmd.Int("max-turns") < 1 || cmd.Int("parallel") < 1 {
		return usageErrorf("--repeats, --max-turns and --parallel must be 1 or more")
	}
	stderr := cmd.Root().ErrWriter
	m, err := model.New(cmd.String("model"), os.Getenv, model.Options{MaxTokens: cmd.Int("max-tokens"),
		ReasoningEffort: cmd.String("reasoning-effort"), Retry: model.DefaultRetry})
	if err != nil {
		return usageErrorf("%v", err)
	}
	backend, err := sandbox.Select(cmd.String("sandbox"))
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return err // infrastructure: exit 3
		}
		return usageErrorf("%v", err)
	}
	if backend.Name() == sandbox.NameNone {
		fmt.Fprintln(stderr, "warning: --sandbox none: the model's commands run on this machine with no isolation")
	}
	template := harness.DefaultTaskTemplate()
	if path := cmd.String("prompt-file"); path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return usageErrorf("--prompt-file: %v", err)
		}
		template = string(b)
	}
	ds, err := data.Open(ctx, cmd.String("dataset"), data.OpenOptions{Hub: hubConfig(), Tasks: cmd.StringSlice("tasks")})
	if err != nil {
		return datasetError(err)
	}
	out := cmd.String("out")
	if out == "" {
		out = filepath.Join("runs", strings.NewReplacer("/", "_", ":", "_").Replace(cmd.String("model"))+"-"+time.Now().Format("20060102-150405"))
	}
	fmt.Fprintf(stderr, "running %d tasks x %d repeats of %s with %s in the %s sandbox into %s\n",
		len(ds.Tasks), cmd.Int("repeats"), ds.Spec, cmd.String("model"), backend.Name(), out)
	summary, results, err := runner.Run(ctx, runner.Config{
		Out: out, DatasetSpec: ds.Spec, Tasks: ds.Tasks, Repeats: cmd.Int("repeats"), Parallel: cmd.Int("parallel"),
		ModelSpec: cmd.String("model"), Model: m, Backend: backend, MaxTurns: cmd.Int("max-turns"),
		CommandTimeout: cmd.Duration("command-timeout"), ContextWindow: int64(cmd.Int("context-window")),
		SystemPrompt: harness.SystemPrompt, TaskTemplate: template,
		Progress: func(r runner.Result) {
			fmt.Fprintf(stderr, "%s repeat %d: %s, score %.2f, %d turns\n", r.Task, r.Repeat, r.Status, r.Score, r.Turns)
		},
		Permanent: func(err error) bool {
			var apiErr *model.APIError
			return errors.As(err, &apiErr) && !apiErr.Transient()
		},
	})
	if errors.Is(err, context.Canceled) {
		return &exitError{code: 130, err: fmt.Errorf("interrupted; run the same command again to resume")}
	}
	if errors.Is(err, runner.ErrConfigChanged) {
		return usageErrorf("%v", err)
	}
	if errors.Is(err, runner.ErrStopped) {
		return badResult(fmt.Errorf("%v; fix the cause, then run the same command again", err))
	}
	if err != nil {
		return err
	}
	if err := report.WriteFolder(out); err != nil {
		return err
	}
	renderGradeText(cmd.Root().Writer, summary)
	fmt.Fprintf(cmd.Root().Writer, "Run folder: %s\n", out)
	failed := 0
	for _, r := range results {
		if r.Status == grader.StatusError {
			failed++
		}
	}
	if failed > 0 {
		return badResult(fmt.Errorf("%d episodes ended in error; run the same command again to retry them", failed))
	}
	return nil
}
