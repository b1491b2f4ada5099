package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/baseline"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/replay"
	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/sandbox"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

func newRunCommand() *cli.Command {
	return &cli.Command{
		Name:  "run",
		Usage: "run a model on every task x repeat of a dataset, in a sandbox, and grade it",
		Description: "Running again with the same --out resumes: finished episodes are kept, failed ones run again.\n\n" +
			"Example: aa-grade run --dataset demo --model builtin/baseline\n" +
			"         aa-grade run --model anthropic/claude-opus-4-7 --reasoning-effort max --out runs/opus\n" +
			"         aa-grade run --model gpt-5.5-xhigh --tasks 2,38   (a preset: see aa-grade models)",
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "model", Required: true, Sources: env("model"),
				Usage: "openai/MODEL, openai-responses/MODEL, anthropic/MODEL, openrouter/ORG/MODEL, openai-api/PROVIDER/MODEL, builtin/baseline, replay/RUN_DIR, or a preset (aa-grade models)"},
			datasetFlag(), tasksFlag(),
			&cli.IntFlag{Name: "repeats", Value: 3, Sources: env("repeats"), Usage: "episodes per task"},
			&cli.IntFlag{Name: "max-turns", Value: harness.DefaultMaxTurns, Sources: env("max_turns"), Usage: "model calls per episode"},
			&cli.IntFlag{Name: "parallel", Value: 4, Sources: env("parallel"), Usage: "episodes at once"},
			&cli.IntFlag{Name: "max-in-flight", Sources: env("max-in-flight"), DefaultText: "--parallel",
				Usage: "model calls at once; halved on each 429 or overload, regained after successes"},
			&cli.IntFlag{Name: "rpm", Sources: env("rpm"), DefaultText: "0: as the provider's answers state",
				Usage: "model requests per minute (the lower of this and the provider's stated limit wins)"},
			&cli.IntFlag{Name: "tpm", Sources: env("tpm"), DefaultText: "0: as the provider's answers state",
				Usage: "model tokens per minute, input and output (the lower of this and the provider's stated limit wins)"},
			&cli.StringFlag{Name: "sandbox", Value: sandbox.NameAuto, Sources: env("sandbox"), Usage: "auto, bwrap, landlock, docker or none (no isolation)"},
			&cli.StringFlag{Name: "sandbox-image", Sources: env("sandbox_image"), DefaultText: sandbox.DefaultImage,
				Usage: "the image an episode runs in: an image name with docker; a docker save tarball, an OCI layout folder or a registry reference (HOST/NAME:TAG, HOST/NAME@sha256:...) with bwrap (see docs/platforms.md)"},
			&cli.StringFlag{Name: "memory-limit", Value: "4GiB", Sources: env("memory_limit"),
				Usage: "memory of an episode's processes together (where the sandbox can bound it: aa-grade doctor)"},
			&cli.StringFlag{Name: "disk-limit", Value: "4GiB", Sources: env("disk_limit"),
				Usage: "bytes an episode's workspace, and its /tmp, may hold (one file per 16 KiB of it)"},
			&cli.StringFlag{Name: "out", Sources: env("out"), Usage: "the run folder (default runs/<model>-<time>)"},
			&cli.DurationFlag{Name: "command-timeout", Value: sandbox.DefaultCommandTimeout, Sources: env("command_timeout"), Usage: "per shell command"},
			&cli.StringFlag{Name: "reasoning-effort", Sources: env("reasoning_effort"), Usage: "the provider's reasoning effort (low, medium, high, max, ...)"},
			&cli.IntFlag{Name: "max-tokens", Sources: env("max_tokens"), Usage: "output tokens per call"},
			&cli.IntFlag{Name: "context-window", Sources: env("context_window"), Usage: "tokens; the history is summarised at 70% (0: never)"},
			&cli.StringFlag{Name: "shard", Sources: env("shard"), Usage: "I/N: run only the I-th of N equal parts of the episodes (join them with aa-grade merge)"},
			&cli.DurationFlag{Name: "grace", Value: runner.DefaultGrace, Sources: env("grace"),
				Usage: "after Ctrl-C, how long running episodes may finish (a second Ctrl-C stops them at once)"},
			priceFlag("price-input", "input tokens", "0"), priceFlag("price-output", "output tokens, reasoning included", "0"),
			priceFlag("price-cached-read", "cached input tokens read", "the input price"),
			priceFlag("price-cached-write", "input tokens written to the cache", "the input price"),
			noProgressFlag(),
		}, append(promptsFlags(), judgeFlags()...)...),
		Action: runRun,
	}
}

func runRun(ctx context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	plan, err := runPlan(cmd)
	if err != nil {
		return err
	}
	if plan.repeats < 1 || plan.maxTurns < 1 || cmd.Int("parallel") < 1 {
		return usageErrorf("--repeats, --max-turns and --parallel must be 1 or more")
	}
	shard, err := runner.ParseShard(cmd.String("shard"))
	if err != nil {
		return usageErrorf("--shard: %v", err)
	}
	prompts, err := loadPrompts(cmd)
	if err != nil {
		return err
	}
	overrides, err := modelOverrides(cmd)
	if err != nil {
		return err
	}
	settings, err := model.Resolve(cmd.String("model"), overrides)
	if err != nil {
		return usageErrorf("%v", err)
	}
	stderr := cmd.Root().ErrWriter
	m, limit, err := newModel(cmd, settings)
	if err != nil {
		return err
	}
	j, err := newJudge(cmd)
	if err != nil {
		return err
	}
	backend, err := sandbox.Select(cmd.String("sandbox"))
	if err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			return err // infrastructure: exit 3
		}
		return usageErrorf("%v", err)
	}
	if ref := cmd.String("sandbox-image"); ref != "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			return err
		}
		if err := sandbox.UseImage(ctx, backend, ref, filepath.Join(cache, "aa-grade", "rootfs"), stderr); err != nil {
			if ctx.Err() != nil {
				return &exitError{code: 130, err: fmt.Errorf("interrupted: %w", err)}
			}
			if errors.Is(err, sandbox.ErrUnavailable) {
				return fmt.Errorf("--sandbox-image: %w", err) // infrastructure: exit 3
			}
			return usageErrorf("--sandbox-image: %w", err)
		}
	}
	limits, err := sandboxLimits(cmd)
	if err != nil {
		return err
	}
	if removed := sandbox.CleanLeftovers(); len(removed) > 0 {
		fmt.Fprintf(stderr, "removed %d scratch folders and cgroups left by aa-grade runs that died\n", len(removed))
	}
	if backend.Name() == sandbox.NameNone {
		fmt.Fprintln(stderr, "warning: --sandbox none: the model's commands run on this machine with no isolation")
	} else if weak := sandbox.LimitsNotEnforced(backend); len(weak) > 0 {
		var what []string
		for _, g := range weak {
			what = append(what, g.Name+": "+g.Detail)
		}
		fmt.Fprintf(stderr, "warning: the %s sandbox cannot enforce here %s (aa-grade doctor says more)\n", backend.Name(), strings.Join(what, "; "))
	}
	ds, err := data.Open(ctx, plan.dataset, data.OpenOptions{Hub: hubConfig(), Tasks: plan.tasks})
	if err != nil {
		return datasetError(err)
	}
	out := cmd.String("out")
	if out == "" {
		out = filepath.Join("runs", strings.NewReplacer("/", "_", ":", "_").Replace(cmd.String("model"))+"-"+time.Now().Format("20060102-150405"))
	}
	folder, err := runfolder.Open(out) // locked until the reports are written
	if err != nil {
		return runFolderError(err)
	}
	defer folder.Close() // every result was synced as it was appended
	if folder.Prev != nil {
		printSkipped(stderr, folder.Prev.Warnings)
	}
	part := ""
	if shard.Count > 1 {
		part = fmt.Sprintf(" (shard %s)", shard)
	}
	fmt.Fprintf(stderr, "running %d tasks x %d repeats%s of %s with %s in the %s sandbox into %s\n",
		len(ds.Tasks), plan.repeats, part, ds.Spec, describeModel(settings), backend.Name(), out)
	progress := newRunProgress(stderr, cmd.Bool("no-progress"))
	progress.limits = limit.Status
	progress.Start()
	cfg := runner.Config{
		Folder: folder, DatasetSpec: ds.Spec, Tasks: ds.Tasks, Repeats: plan.repeats, Parallel: cmd.Int("parallel"), Shard: shard,
		DatasetCommit: datasetCommit(ds), ModelSpec: settings.Spec, Model: m, BaseURL: endpoint(m),
		ReasoningEffort: settings.ReasoningEffort, MaxTokens: cmd.Int("max-tokens"), Prices: settings.Prices, Backend: backend, MaxTurns: plan.maxTurns,
		CommandTimeout: cmd.Duration("command-timeout"), ContextWindow: settings.ContextWindow, Limits: limits,
		OnEnvironment: func(tools sandbox.Tools) {
			if diff := tools.Differences(); len(diff) > 0 {
				printLine(stderr, "warning: the sandbox differs from the reference one (a score may differ for it): %s", strings.Join(diff, "; "))
			}
		},
		Prompts: prompts,
		Grace:   cmd.Duration("grace"), Abort: secondInterrupt(ctx), Progress: progress,
		Permanent: func(err error) bool {
			var apiErr *model.APIError
			return errors.As(err, &apiErr) && !apiErr.Transient()
		},
	}
	if j != nil {
		cfg.Scorer, cfg.Judge = j.Score, j.Model
	}
	summary, results, err := runner.Run(ctx, cfg)
	progress.Stop()
	if replay, ok := m.(*replay.Model); ok {
		reportDivergences(stderr, replay.Divergences())
	}
	if j != nil {
		fmt.Fprintln(stderr, j.spent())
	}
	var run *report.Run
	rates := limit.Status()
	if results != nil { // the reports of an interrupted or stopped run show how far it got
		if !rates.Idle() {
			if werr := folder.RecordRateLimits(rates); werr != nil {
				printLine(stderr, "warning: %v", werr)
			}
		}
		var werr error
		if run, werr = report.WriteFolder(out, analysisTasks(ds)); werr != nil {
			if err == nil {
				return werr
			}
			printLine(stderr, "warning: %v", werr)
		}
		if run != nil && run.AnalysisErr != nil {
			printLine(stderr, "warning: the reports leave the analysis out: %v", run.AnalysisErr)
		}
	}
	if errors.Is(err, context.Canceled) {
		return &exitError{code: 130, err: fmt.Errorf("interrupted with %d of %d episodes unfinished; to resume, run the same command again (with --out %s)",
			countStatus(results, grader.StatusUnfinished), len(results), out)}
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
	renderGradeText(cmd.Root().Writer, summary)
	fmt.Fprintln(cmd.Root().Writer)
	renderRunTotals(cmd.Root().Writer, run)
	if !rates.Idle() {
		limits, calls := describeLimits(rates, false)
		fmt.Fprintf(cmd.Root().Writer, "Rate limits: %s; %s\n", limits, calls)
	}
	fmt.Fprintf(cmd.Root().Writer, "Run folder: %s\n", out)
	if failed := countStatus(results, grader.StatusError); failed > 0 {
		return badResult(fmt.Errorf("%d episodes ended in error; to retry them, run the same command again (with --out %s)", failed, out))
	}
	return nil
}

// newModel builds the model under test (a provider's, the built-in baseline or a replay), with one rate limiter for the whole run: every
// episode's calls go to the same provider and quota. The limiter is returned too, for the
// display and the run's record of the limits.
func newModel(cmd *cli.Command, settings model.Settings) (model.Model, *model.Limiter, error) {
	maxInFlight := cmd.Int("max-in-flight")
	if maxInFlight == 0 {
		maxInFlight = cmd.Int("parallel")
	}
	limit, err := model.NewLimiter(model.Limits{MaxInFlight: maxInFlight, RPM: cmd.Int("rpm"), TPM: int64(cmd.Int("tpm"))})
	if err != nil {
		return nil, nil, usageErrorf("--max-in-flight, --rpm, --tpm: %v", err)
	}
	var m model.Model
	switch spec := settings.Spec; {
	case spec == model.BaselineSpec:
		m = baseline.Model{}
	case strings.HasPrefix(spec, "builtin/"):
		err = fmt.Errorf("%w: %q: the built-in model is %s", model.ErrModelSpec, spec, model.BaselineSpec)
	case strings.HasPrefix(spec, "replay/"):
		m, err = replay.New(strings.TrimPrefix(spec, "replay/"))
	default:
		m, err = model.New(spec, os.Getenv, model.Options{MaxTokens: cmd.Int("max-tokens"),
			ReasoningEffort: settings.ReasoningEffort, Retry: model.DefaultRetry, Limit: limit})
	}
	if err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	return m, limit, nil
}

// episodesPlan is what a run plays: the dataset, tasks, repeats and turn cap.
type episodesPlan struct {
	dataset  string
	tasks    []string
	repeats  int
	maxTurns int
}

// runPlan reads the plan from the flags. A replay (--model replay/RUN_DIR) takes what the
// flags do not set from the recorded run, so replaying needs no flag but --model.
func runPlan(cmd *cli.Command) (episodesPlan, error) {
	p := episodesPlan{dataset: cmd.String("dataset"), tasks: cmd.StringSlice("tasks"), repeats: cmd.Int("repeats"), maxTurns: cmd.Int("max-turns")}
	dir, ok := strings.CutPrefix(cmd.String("model"), "replay/")
	if !ok {
		return p, nil
	}
	h, err := runfolder.ReadHeader(dir)
	if err != nil {
		return p, runFolderError(err)
	}
	if !cmd.IsSet("dataset") {
		p.dataset = h.Dataset
		if strings.HasPrefix(p.dataset, "hf:") && !strings.Contains(p.dataset, "@") && h.DatasetCommit != "" {
			p.dataset += "@" + h.DatasetCommit // the tasks as they were recorded
		}
	}
	if !cmd.IsSet("tasks") {
		p.tasks = h.Tasks
	}
	if !cmd.IsSet("repeats") {
		p.repeats = h.Repeats
	}
	if !cmd.IsSet("max-turns") {
		p.maxTurns = h.MaxTurns
	}
	return p, nil
}

// endpoint is where a model is called, for run.json ("" for built-in models).
func endpoint(m model.Model) string {
	if e, ok := m.(interface{ Endpoint() string }); ok {
		return e.Endpoint()
	}
	return ""
}

// datasetCommit is the Hub commit a dataset's tasks come from ("" for other datasets).
func datasetCommit(ds *data.Dataset) string {
	if ds.Hub != nil {
		return ds.Hub.Commit
	}
	return ""
}

// secondInterrupt is closed by a Ctrl-C (or SIGTERM) that comes after ctx was cancelled by the
// first: it cuts the grace short.
func secondInterrupt(ctx context.Context) <-chan struct{} {
	abort := make(chan struct{})
	go func() {
		<-ctx.Done()
		sig := make(chan os.Signal, 1)
		signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
		defer signal.Stop(sig)
		<-sig
		close(abort)
	}()
	return abort
}

func countStatus(results []runfolder.Result, status string) int {
	n := 0
	for _, r := range results {
		if r.Status == status {
			n++
		}
	}
	return n
}

// renderRunTotals prints per task the mean turns, the tokens and the cost, and the totals.
func renderRunTotals(w io.Writer, r *report.Run) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TASK\tMEAN TURNS\tINPUT TOKENS\tCACHED\tOUTPUT TOKENS\tREASONING\tCOST\t")
	row := func(name string, turns float64, tokens model.Usage, cost *float64) {
		fmt.Fprintf(tw, "%s\t%.1f\t%d\t%d\t%d\t%d\t%s\t\n", termtext.Sanitize(name), turns,
			tokens.Input, tokens.CachedRead, tokens.Output, tokens.Reasoning, report.FormatUSD(cost))
	}
	for _, t := range r.PerTask() {
		row(t.Task, t.MeanTurns, t.Tokens, t.CostUSD)
	}
	o := r.Overview()
	row("ALL", o.MeanTurns, o.Tokens, o.CostUSD)
	tw.Flush()
}

// reportDivergences says where replayed episodes stopped following their recording.
func reportDivergences(w io.Writer, ds []replay.Divergence) {
	if len(ds) == 0 {
		fmt.Fprintln(w, "replay: every episode followed its recording")
		return
	}
	fmt.Fprintf(w, "replay: %d episodes diverged from their recording (the recorded replies were used regardless):\n", len(ds))
	for _, d := range ds {
		printLine(w, "  %s repeat %d, turn %d: %s", d.Task, d.Repeat, d.Turn, d.Detail)
	}
}

// priceFlag is a token price; setting any one makes the run's prices known, the others coming
// from the preset, else fallback.
func priceFlag(name, what, fallback string) cli.Flag {
	return &cli.FloatFlag{Name: name, Sources: env(name), HideDefault: true,
		Usage: "USD per million " + what + " (default: the preset's, else " + fallback + ")"}
}

// modelOverrides are the model settings given by flag or environment variable: they win over
// a preset's. A price flag must be a finite number, 0 or more.
func modelOverrides(cmd *cli.Command) (model.Overrides, error) {
	var o model.Overrides
	if cmd.IsSet("reasoning-effort") {
		effort := cmd.String("reasoning-effort")
		o.ReasoningEffort = &effort
	}
	if cmd.IsSet("context-window") {
		window := int64(cmd.Int("context-window"))
		o.ContextWindow = &window
	}
	for _, f := range []struct {
		name string
		dst  **float64
	}{{"price-input", &o.Prices.Input}, {"price-output", &o.Prices.Output},
		{"price-cached-read", &o.Prices.CachedRead}, {"price-cached-write", &o.Prices.CachedWrite}} {
		if !cmd.IsSet(f.name) {
			continue
		}
		usd := cmd.Float(f.name)
		if usd < 0 || math.IsNaN(usd) || math.IsInf(usd, 0) {
			return o, usageErrorf("--%s %v: a price is a number of USD, 0 or more", f.name, usd)
		}
		*f.dst = &usd
	}
	return o, nil
}

// describeModel names the model for the progress line: a preset with the spec it stands for.
func describeModel(s model.Settings) string {
	if s.Preset != "" {
		return s.Preset + " (" + s.Spec + ")"
	}
	return s.Spec
}

// sandboxLimits reads --memory-limit and --disk-limit.
func sandboxLimits(cmd *cli.Command) (sandbox.Limits, error) {
	var limits sandbox.Limits
	for _, f := range []struct {
		flag string
		to   *int64
	}{{"memory-limit", &limits.Memory}, {"disk-limit", &limits.Disk}} {
		n, err := parseSize(cmd.String(f.flag))
		if err != nil {
			return limits, usageErrorf("--%s: %v", f.flag, err)
		}
		*f.to = n
	}
	return limits, nil
}
