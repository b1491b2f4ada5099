package main

import (
	"bytes"
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
	"unicode/utf8"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/models/replay"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// runOnlySpecs are the models only a run takes (models.Open builds them), beside the
// providers' (provider.SpecForms).
const runOnlySpecs = models.BaselineSpec + ", replay/RUN_DIR"

// runOptions are the flags of aa-grade run.
type runOptions struct {
	flagsSet
	model                    string
	dataset                  string
	tasks                    []string
	limit, sample, seed      int
	repeats                  int
	parallel, maxInFlight    int
	rpm, tpm                 int
	sandbox, sandboxImage    string
	memoryLimit, diskLimit   string
	out                      string
	grace                    time.Duration
	reasoningEffort          string
	maxTokens, contextWindow int
	loop                     string
	shardSpec                string
	priceInput, priceOutput  float64
	priceCachedRead          float64
	priceCachedWrite         float64
	maxCost                  float64
	maxRetryTime             time.Duration
	failOnError              float64
	noProgress, dryRun       bool
	prompts                  promptOptions
	judge                    judgeOptions
	agent                    agentOptions
	params                   paramOptions
	// episode holds the settings the flags give as they are (--max-turns, --command-timeout,
	// and the loop Validate reads from --loop); episodeSettings completes them.
	episode settings.Settings

	// Set by Validate from the flags above.
	shard  runfolder.Shard
	limits sandbox.Limits
}

func (o *runOptions) flags() []cli.Flag {
	flags := []cli.Flag{
		&cli.StringFlag{Name: "model", Required: true, Destination: &o.model, Sources: env("model"),
			Usage: provider.SpecForms() + ", " + runOnlySpecs + ", or a preset (aa-grade models)"},
		datasetFlag(&o.dataset), tasksFlag(&o.tasks),
		&cli.IntFlag{Name: "limit", Destination: &o.limit, Sources: env("limit"), DefaultText: "all",
			Usage: "only the first N tasks (of --tasks, else of the dataset)"},
		&cli.IntFlag{Name: "sample", Destination: &o.sample, Sources: env("sample"), DefaultText: "all",
			Usage: "only K tasks drawn at random (of --tasks, else of the dataset), the same K for the same --seed"},
		&cli.IntFlag{Name: "seed", Destination: &o.seed, Sources: env("seed"), Usage: "the draw of --sample"},
		&cli.IntFlag{Name: "repeats", Value: 3, Destination: &o.repeats, Sources: env("repeats"), Usage: "episodes per task"},
		&cli.IntFlag{Name: "max-turns", Value: loop.DefaultMaxTurns, Destination: &o.episode.MaxTurns,
			Sources: env("max-turns"), Usage: "model calls per episode"},
		&cli.IntFlag{Name: "parallel", Value: 4, Destination: &o.parallel, Sources: env("parallel"),
			Usage: "episodes at once"},
		&cli.IntFlag{Name: "max-in-flight", Destination: &o.maxInFlight, Sources: env("max-in-flight"),
			DefaultText: "--parallel", Usage: "model calls at once; halved on each 429 or overload, regained after successes"},
		&cli.IntFlag{Name: "rpm", Destination: &o.rpm, Sources: env("rpm"), DefaultText: "0: as the provider's answers state",
			Usage: "model requests per minute (the lower of this and the provider's stated limit wins)"},
		&cli.IntFlag{Name: "tpm", Destination: &o.tpm, Sources: env("tpm"), DefaultText: "0: as the provider's answers state",
			Usage: "model tokens per minute, input and output (the lower of this and the provider's stated limit wins)"},
		sandboxFlag(&o.sandbox), sandboxImageFlag(&o.sandboxImage),
		&cli.StringFlag{Name: "memory-limit", Value: "4GiB", Destination: &o.memoryLimit, Sources: env("memory-limit"),
			Usage: "memory of an episode's processes together (where the sandbox can bound it: aa-grade doctor)"},
		&cli.StringFlag{Name: "disk-limit", Value: "4GiB", Destination: &o.diskLimit, Sources: env("disk-limit"),
			Usage: "bytes an episode's workspace, and its /tmp, may hold (one file per 16 KiB of it)"},
		&cli.StringFlag{Name: "out", Destination: &o.out, Sources: env("out"), DefaultText: "runs/<model>-<time>",
			Usage: "the run folder"},
		&cli.DurationFlag{Name: "command-timeout", Value: sandbox.DefaultCommandTimeout, Sources: env("command-timeout"),
			Destination: (*time.Duration)(&o.episode.CommandTimeout), Usage: "per shell command"},
		&cli.StringFlag{Name: "reasoning-effort", Destination: &o.reasoningEffort, Sources: env("reasoning-effort"),
			Usage: "the provider's reasoning effort (low, medium, high, max, ...)", DefaultText: "the preset's, else " +
				"the provider's"},
		&cli.StringFlag{Name: "loop", Value: string(settings.LoopReference), Destination: &o.loop, Sources: env("loop"),
			Usage: "the agent loop: reference (Stirrup 0.1.9's, comparable with the leaderboard) or lenient (aa-grade's " +
				"departures, not comparable: docs/fidelity.md)"},
		&cli.IntFlag{Name: "max-tokens", Destination: &o.maxTokens, Sources: env("max-tokens"),
			DefaultText: fmt.Sprintf("the preset's, else %d", model.DefaultMaxTokens),
			Usage:       "output tokens per call, sent on every call; the reference loop summarises the history at 70% of it"},
		&cli.IntFlag{Name: "context-window", Destination: &o.contextWindow, Sources: env("context-window"),
			DefaultText: "the preset's, else 0: never",
			Usage:       "--loop lenient only: tokens; that loop summarises the history at 70% of it"},
		&cli.StringFlag{Name: "shard", Destination: &o.shardSpec, Sources: env("shard"),
			Usage: "I/N: run only the I-th of N equal parts of the episodes (join them with aa-grade merge)"},
		&cli.DurationFlag{Name: "grace", Value: runner.DefaultGrace, Destination: &o.grace, Sources: env("grace"),
			Usage: "after Ctrl-C, how long running episodes may finish (a second Ctrl-C stops them at once)"},
		priceFlag("price-input", &o.priceInput, "input tokens", "0"),
		priceFlag("price-output", &o.priceOutput, "output tokens, reasoning included", "0"),
		priceFlag("price-cached-read", &o.priceCachedRead, "cached input tokens read", "the input price"),
		priceFlag("price-cached-write", &o.priceCachedWrite, "input tokens written to the cache", "the input price"),
		noProgressFlag(&o.noProgress),
		&cli.FloatFlag{Name: "max-cost", Destination: &o.maxCost, Sources: env("max-cost"), DefaultText: "no budget",
			Usage: "USD the run may spend, earlier episodes in --out included: no episode starts once the spend and a " +
				"projection of the running ones would pass it, and running ones stop when it is reached"},
		&cli.DurationFlag{
			Name:        "max-retry-time",
			Value:       provider.DefaultRetryTime,
			Destination: &o.maxRetryTime,
			Sources:     env("max-retry-time"),
			Usage: "per model call: how long its transient failures (throttling, 5xx, timeouts) are retried before its " +
				"episode ends in error; permanent ones (quota, billing, 4xx, no such host) stop the run at once",
		},
		&cli.FloatFlag{
			Name:        "fail-on-error",
			Destination: &o.failOnError,
			Sources:     env("fail-on-error"),
			DefaultText: "0: never",
			Usage: "stop the run once N episodes ended in error (N from 1), or more than a fraction of those planned " +
				"(0.1: more than one in ten)",
		},
		&cli.BoolFlag{Name: "dry-run", Destination: &o.dryRun,
			Usage: "say what would run and what it should cost, and call nothing"},
	}
	flags = append(append(flags, o.params.flags()...), o.prompts.flags()...)
	return append(append(flags, o.judge.flags()...), o.agent.flags()...)
}

// Validate refuses values that mean nothing, naming the flag, before anything is started or
// recorded.
func (o *runOptions) Validate() error {
	for _, f := range []struct {
		name string
		n    int
		min  int
		what string
	}{
		{"repeats", o.repeats, 1, "1 or more"}, {"max-turns", o.episode.MaxTurns, 1, "1 or more"},
		{"parallel", o.parallel, 1, "1 or more"},
		{"max-in-flight", o.maxInFlight, 0, "0 (as --parallel) or more"},
		{"rpm", o.rpm, 0, "0 (as the provider states) or more"}, {"tpm", o.tpm, 0, "0 (as the provider states) or more"},
		{"context-window", o.contextWindow, 0, "0 (never summarise) or more"},
	} {
		if f.n < f.min {
			return usageErrorf("--%s %d: must be %s", f.name, f.n, f.what)
		}
	}
	if err := o.validSelection(); err != nil {
		return err
	}
	if err := o.validLoop(); err != nil {
		return err
	}
	if err := o.agent.Validate(o.isSet); err != nil {
		return err
	}
	var err error
	if o.episode.Params, err = o.params.read(o.isSet); err != nil {
		return err
	}
	if o.episode.CommandTimeout <= 0 {
		return usageErrorf("--command-timeout %s: must be more than 0", o.episode.CommandTimeout)
	}
	if o.maxRetryTime <= 0 {
		return usageErrorf("--max-retry-time %s: must be more than 0", o.maxRetryTime)
	}
	if f := o.failOnError; f < 0 || math.IsNaN(f) || math.IsInf(f, 0) || (f > 1 && f != math.Trunc(f)) {
		return usageErrorf("--fail-on-error %v: must be 0 (never), a count of episodes from 1, or a fraction between 0 and 1",
			f)
	}
	if o.grace < 0 {
		return usageErrorf("--grace %s: must be 0 (stop at once) or more", o.grace)
	}
	for _, f := range []struct {
		name string
		usd  float64
	}{{"price-input", o.priceInput}, {"price-output", o.priceOutput}, {"price-cached-read", o.priceCachedRead},
		{"price-cached-write", o.priceCachedWrite}, {"max-cost", o.maxCost}} {
		if f.usd < 0 || math.IsNaN(f.usd) || math.IsInf(f.usd, 0) {
			return usageErrorf("--%s %v: a price is a number of USD, 0 or more", f.name, f.usd)
		}
	}
	if o.shard, err = runfolder.ParseShard(o.shardSpec); err != nil {
		return usageErrorf("--shard: %w", err)
	}
	for _, f := range []struct {
		name, value string
		to          *int64
	}{{"memory-limit", o.memoryLimit, &o.limits.Memory}, {"disk-limit", o.diskLimit, &o.limits.Disk}} {
		if *f.to, err = parseSize(f.value); err != nil {
			return usageErrorf("--%s: %w", f.name, err)
		}
	}
	if err := validSandbox(o.sandbox); err != nil {
		return err
	}
	if o.out != "" {
		if err := checkOutPath("out", o.out); err != nil {
			return err
		}
	}
	return o.judge.Validate()
}

// validSelection checks --limit, --sample and --seed: counts of 1 or more, one way of choosing
// at a time, and a seed only for a sample it would draw.
func (o *runOptions) validSelection() error {
	switch {
	case o.isSet("limit") && o.limit < 1:
		return usageErrorf("--limit %d: must be 1 or more", o.limit)
	case o.isSet("sample") && o.sample < 1:
		return usageErrorf("--sample %d: must be 1 or more", o.sample)
	case o.isSet("limit") && o.isSet("sample"):
		return usageErrorf("--limit and --sample: give one (the first N tasks, or a random K)")
	case o.isSet("seed") && !o.isSet("sample"):
		return usageErrorf("--seed: only with --sample")
	}
	return nil
}

// selection is the choice of tasks --limit, --sample and --seed ask for.
func (o *runOptions) selection() runfolder.Selection {
	return runfolder.Selection{Limit: o.limit, Sample: o.sample, Seed: int64(o.seed)}
}

// selectTasks narrows the tasks asked for (--tasks, else the dataset's) to the selection,
// reading only the dataset's index to find them: the snapshots of the others are never
// downloaded.
func selectTasks(ctx context.Context, dataset string, tasks []string, sel runfolder.Selection) ([]string, error) {
	if sel == (runfolder.Selection{}) {
		return tasks, nil
	}
	ds, err := data.Open(ctx, dataset, data.OpenOptions{Hub: hubConfig(), Tasks: tasks, IndexOnly: true})
	if err != nil {
		return nil, datasetError(err)
	}
	return sel.Apply(taskIDs(ds.Tasks)), nil
}

// validLoop reads --loop and checks the flags that depend on it: --max-tokens is a cap of 1
// or more (0, the provider's own default, only in the lenient loop, as aa-grade used to send no
// cap), and --context-window belongs to the lenient loop (the reference loop summarises against
// --max-tokens).
func (o *runOptions) validLoop() error {
	var err error
	if o.episode.Loop, err = settings.ParseLoop(o.loop); err != nil {
		return usageErrorf("--loop: %w", err)
	}
	lenient := o.episode.Loop == settings.LoopLenient
	switch {
	case o.isSet("max-tokens") && o.maxTokens < 0:
		return usageErrorf("--max-tokens %d: must be 1 or more", o.maxTokens)
	case o.isSet("max-tokens") && o.maxTokens == 0 && !lenient:
		return usageErrorf("--max-tokens 0: must be 1 or more (0, the provider's default, only with --loop lenient)")
	case o.isSet("context-window") && !lenient:
		return usageErrorf(
			"--context-window: only with --loop lenient (the reference loop summarises at 70%% of --max-tokens)")
	}
	return nil
}

func newRunCommand() *cli.Command {
	var opts runOptions
	return &cli.Command{
		Name:  "run",
		Usage: "run a model on every task x repeat of a dataset, in a sandbox, and grade it",
		Description: "Running again with the same --out resumes: finished episodes are kept, failed ones run again.\n\n" +
			"Example: aa-grade run --dataset demo --model builtin/baseline\n" +
			"         aa-grade run --model anthropic/claude-opus-4-7 --reasoning-effort max --out runs/opus\n" +
			"         aa-grade run --model gpt-5.5-xhigh --tasks 2,38   (a preset: see aa-grade models)",
		Flags:  opts.flags(),
		Action: action(&opts, runRun),
	}
}

// runRun reads as the run goes: prepare (flags into a plan and a model), start (the sandbox,
// the dataset, the folder), play the episodes, finish the folder, render the outcome.
func runRun(ctx context.Context, opts runOptions, args []string, con console) error {
	if err := noArgs("run", args); err != nil {
		return err
	}
	p, err := prepareRun(ctx, opts)
	if err != nil {
		return err
	}
	if opts.dryRun {
		return dryRun(ctx, con.out, opts, p)
	}
	r, err := startRun(ctx, opts, p, con.err)
	if err != nil {
		return err
	}
	defer sandbox.Release(r.cfg.Backend) // the docker backend's volumes of the tasks' files
	played := r.play(ctx, con.err, opts.noProgress)
	run, err := r.finish(con.err, played)
	if err == nil {
		err = r.render(con.out, played, run)
	}
	// Every result was synced as it was appended; a failed Close is told all the same.
	if cerr := r.cfg.Folder.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close the run folder: %w", cerr)
	}
	return err
}

// preparedRun is what the flags make of a run before anything starts: the plan, the
// settings every episode is played with, the model (with its rate limiter and judge) and the
// run folder's path.
type preparedRun struct {
	plan     episodesPlan
	episode  settings.Settings
	settings models.Settings
	model    model.Model
	limit    *ratelimit.Limiter
	judge    *llmJudge // nil: the rules grade
	out      string
	// An agent run's provider, as its gateway calls it, and model name.
	agentUpstream gateway.Upstream
	agentModel    string
	// needs are the variables the run will need that the environment lacks (a key, a base
	// URL): only a dry run, which calls nothing, gets this far without them (model nil).
	needs []string
}

// prepareRun reads the flags (and a replay's recording) into a run, calling no model and
// starting no sandbox, so that a dry run can stop there.
func prepareRun(ctx context.Context, opts runOptions) (*preparedRun, error) {
	plan, err := runPlan(opts)
	if err != nil {
		return nil, err
	}
	var base *promptset.Set // the set --prompts and --prompt-file start from: a replay's, else the built-in one
	if plan.recorded != nil {
		base = plan.recorded.Prompts
	}
	prompts, err := opts.prompts.load(base)
	if err != nil {
		return nil, err
	}
	settings, err := models.Resolve(opts.model, opts.overrides())
	if err != nil {
		return nil, modelSpecError("--model", err)
	}
	if settings.Prices == nil { // a replay costs what its recording did, unless --price-* say
		settings.Prices = plan.prices
	}
	if opts.maxCost > 0 && settings.Prices == nil {
		return nil, usageErrorf("--max-cost %v: the model's prices are unknown, so its spend is unknown too; "+
			"give them (a preset has them, or --price-input and --price-output)", opts.maxCost)
	}
	if err := opts.checkParams(settings); err != nil {
		return nil, err
	}
	episode := episodeSettings(opts, plan.recorded, settings, prompts)
	var needs []string
	m, limit, err := newModel(opts, settings, episode)
	if needs, err = dryRunNeeds(opts.dryRun, needs, err); err != nil {
		return nil, err
	}
	var up gateway.Upstream
	var agentModel string
	if a := opts.agent.agent; a == nil {
		if err := gateway.CheckModel(settings.Spec, false); err != nil {
			return nil, usageErrorf("--model %s: %w; aa-grade's loop runs none of the provider's tools", settings.Spec, err)
		}
	} else if m != nil {
		if up, agentModel, err = agentUpstream(*a, settings.Spec, m, opts.agent.providerTools); err != nil {
			return nil, err
		}
		settings.Prices = withSearchPrice(settings.Prices, opts.agent.providerTools, up.Protocol)
	}
	j, err := newJudge(opts.judge)
	if needs, err = dryRunNeeds(opts.dryRun, needs, err); err != nil {
		return nil, err
	}
	out := opts.out
	if out == "" {
		out = filepath.Join("runs",
			strings.NewReplacer("/", "_", ":", "_").Replace(opts.model)+"-"+time.Now().Format("20060102-150405"))
	}
	if plan.tasks, err = selectTasks(ctx, plan.dataset, plan.tasks, opts.selection()); err != nil {
		return nil, err
	}
	return &preparedRun{plan: plan, episode: episode, settings: settings, model: m, limit: limit, judge: j, out: out,
		agentUpstream: up, agentModel: agentModel, needs: needs}, nil
}

// dryRunNeeds lets a dry run go on without a variable a model needs (provider.MissingVariableError),
// adding its name to needs; any other error, or a missing variable outside a dry run, is err.
func dryRunNeeds(dryRun bool, needs []string, err error) ([]string, error) {
	var missing *provider.MissingVariableError
	if dryRun && errors.As(err, &missing) {
		return append(needs, missing.Name), nil
	}
	return needs, err
}

// startedRun is a run ready to play: its sandbox tried, its dataset open, its folder locked
// and the runner's configuration checked against what the folder holds.
type startedRun struct {
	*preparedRun
	ds  *data.Dataset
	cfg runner.Config
}

// startRun tries the sandbox, opens the dataset and the folder, and says what is about to
// run. A sandbox that cannot run an episode, a replay that cannot follow or a resume of
// another configuration is refused before the run says anything: the error is the only line.
func startRun(ctx context.Context, opts runOptions, p *preparedRun, stderr io.Writer) (*startedRun, error) {
	backend, err := sandbox.Select(opts.sandbox)
	if err != nil {
		return nil, isolationHint(fmt.Errorf("--sandbox: %w", err))
	}
	started := false
	defer func() {
		if !started { // what the sandbox keeps for the run's episodes (the probe's) goes with it
			sandbox.Release(backend)
		}
	}()
	if err := useImage(ctx, backend, opts.sandboxImage, stderr); err != nil {
		return nil, err
	}
	tools, err := sandbox.ProbeTools(ctx, backend)
	if err != nil {
		if ctx.Err() != nil {
			return nil, interrupted(fmt.Errorf("interrupted: %w", err))
		}
		return nil, imageHint(fmt.Errorf("probe the sandbox: %w", err))
	}
	plan, settings := p.plan, p.settings
	ds, err := data.Open(ctx, plan.dataset, data.OpenOptions{Hub: hubConfig(), Tasks: plan.tasks})
	if err != nil {
		return nil, datasetError(err)
	}
	rm, replayed := p.model.(*replay.Model)
	if replayed {
		if err := rm.Covers(opts.shard.Episodes(taskIDs(ds.Tasks), plan.repeats)); err != nil {
			return nil, usageErrorf("%w: ask for those tasks and repeats (--tasks, --repeats)", err)
		}
	}
	folder, err := runfolder.Open(p.out) // locked until the reports are written; errors name the folder
	if err != nil {
		return nil, err
	}
	cfg := runner.Config{
		MaxCost: opts.maxCost, CostPrior: orZero(publishedCost(settings.Preset)), FailOnError: opts.failOnError,
		Folder: folder, Tasks: ds.Tasks, Repeats: plan.repeats, Parallel: opts.parallel, Shard: opts.shard,
		Description: runner.Description{Dataset: ds.Spec, DatasetCommit: datasetCommit(ds), Selection: opts.selection(),
			Model: settings.Spec, BaseURL: endpoint(p.model), ReasoningEffort: settings.ReasoningEffort},
		Player: runner.Loop{Model: p.model}, Settings: p.episode, Prices: settings.Prices, Replayed: replayed,
		Backend: backend, Limits: opts.limits, Tools: &tools,
		OnEnvironment: func(tools sandbox.Tools) {
			if diff := tools.Differences(); len(diff) > 0 {
				warnLine(stderr, "warning: the sandbox differs from the reference one (a score may differ for it): %s; "+
					"for the reference one, build its image (docker build -t %s deploy/sandbox) and run with "+
					"--sandbox docker, which aa-grade doctor --sandbox docker checks", strings.Join(diff, "; "),
					sandbox.DefaultImage)
			}
		},
		Grace: opts.grace, Abort: secondInterrupt(ctx),
	}
	if opts.agent.agent != nil {
		a, info, err := agentRun(ctx, opts.agent, p, backend, p.episode.MaxTurns)
		if err != nil {
			_ = folder.Close() // the run never began: err is what it tells
			return nil, err
		}
		a.RetryTime = opts.maxRetryTime
		cfg.Player, cfg.Description.Agent = a, info
	}
	if j := p.judge; j != nil {
		// The verdicts go with the run; the user's cache is still read, so a question asked
		// before costs nothing.
		j.ReadDirs, j.CacheDir = []string{j.CacheDir}, filepath.Join(p.out, runfolder.JudgeDir)
		cfg.Scorer, cfg.Judge, cfg.JudgePrices = j.Score, j.Model, j.prices
	}
	if err := runner.CheckResume(cfg); err != nil {
		_ = folder.Close() // the run never began: err is what it tells
		return nil, configChanged(err, p.out)
	}
	r := &startedRun{preparedRun: p, ds: ds, cfg: cfg}
	r.announce(stderr, opts)
	todo, _ := pendingEpisodes(ds.Tasks, plan.repeats, opts.shard, folder.Prev)
	if err := r.preflight(ctx, stderr, len(todo)); err != nil {
		_ = folder.Close() // the run never began: err is what it tells
		return nil, err
	}
	started = true
	return r, nil
}

// announce says, before the first episode, what the sandbox will not do, what the folder
// skipped, what runs where, and what it may cost.
func (r *startedRun) announce(stderr io.Writer, opts runOptions) {
	ds, plan, folder, backend := r.ds, r.plan, r.cfg.Folder, r.cfg.Backend
	if removed := sandbox.CleanLeftovers(); len(removed) > 0 {
		fmt.Fprintf(stderr, "removed %s left by aa-grade runs that died\n", removed)
	}
	warnSandbox(stderr, backend)
	if folder.Prev != nil {
		printSkipped(stderr, folder.Prev.Warnings)
	}
	part := ""
	if opts.shard.Count > 1 {
		part = fmt.Sprintf(" (shard %s)", opts.shard)
	}
	who := describeModel(r.settings)
	if a := r.cfg.Description.Agent; a != nil {
		who = fmt.Sprintf("%s calling %s through the gateway", a, who)
	}
	fmt.Fprintf(stderr, "running %s x %s%s of %s with %s in the %s sandbox into %s\n",
		english.Count(len(ds.Tasks), "task"), english.Count(plan.repeats, "repeat"), part, ds.Spec, who, backend.Name(),
		r.out)
	if params := r.episode.Params; !params.IsZero() {
		printLine(stderr, "model parameters: %s (the reference harness sends none: "+
			"not comparable with the leaderboard)", params)
	}
	todo, _ := pendingEpisodes(ds.Tasks, plan.repeats, opts.shard, folder.Prev)
	if e := costEstimate(r.settings, len(todo), folder.Prev); e != "" {
		printLine(stderr, "%s", e)
	}
	if opts.maxCost > 0 {
		printLine(stderr, "budget: $%.2f (--max-cost), %s of it spent already in %s (%s)", opts.maxCost,
			spentBefore(folder.Prev), r.out, runfolder.SpendFile)
	}
}

// playedRun is what the episodes left: the summary, every episode's result (nil when the
// runner refused to start), the rate limits as the run ended, and the runner's error.
type playedRun struct {
	summary grader.Summary
	results []runfolder.Result
	rates   ratelimit.Status
	cost    string // spent and projected, as the progress display last showed them
	err     error
}

// play runs the episodes under the progress display, then says how a replay followed its
// recording and what the judge spent.
func (r *startedRun) play(ctx context.Context, stderr io.Writer, noProgress bool) playedRun {
	progress := newRunProgress(stderr, noProgress)
	progress.limits, progress.state.costPrior, progress.state.priced = r.limit.Status, r.cfg.CostPrior, r.cfg.Prices != nil
	progress.Start()
	r.cfg.Progress = progress.tell
	summary, results, err := runner.Run(ctx, r.cfg)
	progress.Stop()
	if replay, ok := r.model.(*replay.Model); ok && results != nil { // nil: refused, nothing played
		reportDivergences(stderr, replay.Divergences(), countStatus(results, grader.StatusError))
	}
	if r.judge != nil {
		fmt.Fprintln(stderr, r.judge.spent())
	}
	return playedRun{summary: summary, results: results, rates: r.limit.Status(), cost: progress.costText(), err: err}
}

// finish writes the reports of a run that played, an interrupted or stopped one too (they show
// how far it got), and turns the runner's error into the command's, saying how to go on.
func (r *startedRun) finish(stderr io.Writer, p playedRun) (*report.Run, error) {
	var run *report.Run
	if p.results != nil {
		var err error
		if run, err = finishRun(stderr, r.out, r.cfg.Folder, p.rates, analysisTasks(r.ds)); err != nil {
			if p.err == nil {
				return nil, err
			}
			warnLine(stderr, "warning: %v", err)
		}
	}
	if errors.Is(p.err, context.Canceled) || errors.Is(p.err, runner.ErrBudget) { // what going on would cost
		printLine(stderr, "cost: %s", p.cost)
	}
	switch err := p.err; {
	case errors.Is(err, context.Canceled):
		return nil, interrupted(
			fmt.Errorf("interrupted with %d of %s unfinished; to resume, run the same command again (with --out %s)",
				countStatus(p.results, grader.StatusUnfinished), english.Count(len(p.results), "episode"), r.out))
	case errors.Is(err, runner.ErrBudget):
		return nil, badResult(
			fmt.Errorf("%w; no more episodes started (to go on, run the same command with a higher --max-cost)", err))
	case errors.Is(err, runner.ErrStopped):
		return nil, fmt.Errorf("%w (--fail-on-error); fix the cause, then run the same command again to resume", err)
	case errors.Is(err, runner.ErrConfigChanged):
		return nil, configChanged(err, r.out)
	case err != nil:
		return nil, err
	}
	return run, nil
}

// render prints the score, the totals and the rate limits of a run that ended, and fails when
// the judge failed everywhere or episodes ended in error.
func (r *startedRun) render(w io.Writer, p playedRun, run *report.Run) error {
	renderGradeText(w, p.summary)
	fmt.Fprintln(w)
	renderRunTotals(w, run, columns(w))
	fmt.Fprintln(w, run.Overview().SpendNote())
	if !p.rates.Idle() {
		limits, calls := describeLimits(p.rates, false)
		fmt.Fprintf(w, "Rate limits: %s; %s\n", limits, calls)
	}
	fmt.Fprintf(w, "Run folder: %s\n", r.out)
	if err := judgeFailedEverywhere(p.summary); err != nil {
		return err
	}
	if failed := countStatus(p.results, grader.StatusError); failed > 0 {
		return badResult(fmt.Errorf("%s ended in error; to retry them, run the same command again (with --out %s)",
			english.Count(failed, "episode"), r.out))
	}
	return nil
}

// configChanged is the refusal of a resume of the run folder out with another configuration,
// saying the two ways on; for a run.json aa-grade repair rebuilt, the same flags cannot match
// what it could not know, so the way on is to write that into run.json.
func configChanged(err error, out string) error {
	if errors.Is(err, runner.ErrRebuiltHeader) {
		return fmt.Errorf("%w: write the values you know into %s and take their names out of its \"unknown\", "+
			"or use another --out", err, filepath.Join(out, runfolder.HeaderFile))
	}
	return fmt.Errorf("%w: use another --out, or the same flags", err)
}

// warnSandbox says, once at the start, what the sandbox will not do here: isolate at all
// (--sandbox none), or enforce a limit.
func warnSandbox(stderr io.Writer, backend sandbox.Backend) {
	if backend.Name() == sandbox.NameNone {
		warnLine(stderr, "warning: --sandbox none: the model's commands run on this machine with no isolation")
	} else if weak := sandbox.LimitsNotEnforced(backend); len(weak) > 0 {
		var what []string
		for _, g := range weak {
			what = append(what, g.Name+": "+g.Detail)
		}
		warnLine(stderr, "warning: the %s sandbox cannot enforce here %s (aa-grade doctor says more)", backend.Name(),
			strings.Join(what, "; "))
	}
}

// newModel builds the model under test (models.Open: a provider's, the built-in baseline or a
// replay), sending back the reasoning the loop does and the episodes' model parameters, with
// one rate limiter for the whole run: every episode's calls go to the same provider and quota.
// The limiter is returned too, for the display and the run's record of the limits.
func newModel(opts runOptions, s models.Settings, episode settings.Settings) (model.Model, *ratelimit.Limiter,
	error) {
	maxInFlight := opts.maxInFlight
	if maxInFlight == 0 {
		maxInFlight = opts.parallel
	}
	limit, err := ratelimit.New(ratelimit.Limits{MaxInFlight: maxInFlight, RPM: opts.rpm, TPM: int64(opts.tpm)})
	if err != nil {
		return nil, nil, usageErrorf("--max-in-flight, --rpm, --tpm: %w", err)
	}
	m, err := models.Open(s.Spec, os.Getenv, provider.Options{MaxTokens: int(s.MaxTokens),
		ReasoningEffort: s.ReasoningEffort, Retry: provider.DefaultRetry, Budget: opts.maxRetryTime, Limit: limit,
		Reference: episode.Loop != settings.LoopLenient, Params: episode.Params})
	if errors.Is(err, provider.ErrOwnedField) {
		return nil, nil, usageErrorf("--model-arg, --model-header: %w (--max-tokens, --reasoning-effort, --temperature "+
			"and --top-p set the loop's own; a key comes from the provider's variable)", err)
	}
	if errors.Is(err, provider.ErrNotProvider) {
		return nil, nil, fmt.Errorf("--model: %w; or %s, or a preset (aa-grade models)", err, runOnlySpecs)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("--model: %w", err)
	}
	return m, limit, nil
}

// episodesPlan is what a run plays: the dataset, tasks and repeats, and a replay's recording.
type episodesPlan struct {
	dataset string
	tasks   []string
	repeats int
	prices  *model.Prices // a replay's: the recorded run's, for the recorded usage
	// recorded are the settings a replay's recording was played with (nil: no replay), which
	// episodeSettings takes where the flags say nothing; their prompt set is nil when --prompts
	// gives the set in place of one the recording does not keep.
	recorded *settings.Settings
}

// runPlan reads the plan from the flags. A replay (--model replay/RUN_DIR) takes what the
// flags do not set from the recorded run, so replaying needs no flag but --model.
func runPlan(opts runOptions) (episodesPlan, error) {
	p := episodesPlan{dataset: opts.dataset, tasks: opts.tasks, repeats: opts.repeats}
	dir, ok := strings.CutPrefix(opts.model, "replay/")
	if !ok {
		return p, nil
	}
	h, err := runfolder.ReadHeader(dir) // errors name the folder
	if err != nil {
		return p, err
	}
	if !opts.isSet("dataset") {
		p.dataset = recordedDataset(h) // the tasks as they were recorded
	}
	if !opts.isSet("tasks") {
		p.tasks = h.Tasks
	}
	if !opts.isSet("repeats") {
		p.repeats = h.Repeats
	}
	p.prices = h.Prices
	recorded, err := h.EpisodeSettings(dir)
	if err != nil && !opts.isSet("prompts") { // the texts the recording was made with, unless --prompts gives others
		return p, usageErrorf("replay/%s: %w; give the set with --prompts FILE", dir, err)
	}
	p.recorded = &recorded
	return p, nil
}

// recordedDataset is the dataset spec of a run's header, a Hub dataset pinned to the commit
// the run recorded: the tasks and ground truths as they were when it ran.
func recordedDataset(h runfolder.Header) string {
	if hs, err := data.ParseHubSpec(h.Dataset); err == nil && h.DatasetCommit != "" {
		hs.Revision = h.DatasetCommit
		return hs.String()
	}
	return h.Dataset
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

// renderRunTotals prints per task the mean turns, the tokens and the cost, and the totals: a
// table, or, on a terminal narrower than the table (cols > 0), three short lines a task, so
// that the rows do not wrap into each other.
func renderRunTotals(w io.Writer, r *report.Run, cols int) {
	type total struct {
		name   string
		turns  float64
		tokens model.Usage
		cost   *float64
	}
	var totals []total
	for _, t := range r.PerTask() {
		totals = append(totals, total{termtext.Sanitize(t.Task), t.MeanTurns, t.Tokens, t.CostUSD})
	}
	o := r.Overview()
	totals = append(totals, total{"ALL", o.MeanTurns, o.Tokens, o.CostUSD})
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "TASK\tMEAN TURNS\tINPUT TOKENS\tCACHED\tOUTPUT TOKENS\tREASONING\tCOST\t")
	for _, t := range totals {
		fmt.Fprintf(tw, "%s\t%.1f\t%s\t%s\t%s\t%s\t%s\t\n", t.name, t.turns, english.Number(t.tokens.Input),
			english.Number(t.tokens.CachedRead), english.Number(t.tokens.Output), english.Number(t.tokens.Reasoning),
			report.FormatUSD(t.cost))
	}
	tw.Flush()
	if cols <= 0 || widestLine(table.String()) < cols {
		_, _ = w.Write(table.Bytes()) // the console's writer keeps its error (outputWriter)
		return
	}
	for _, t := range totals {
		fmt.Fprintf(w, "%s: %.1f turns, %s\n", t.name, t.turns, report.FormatUSD(t.cost))
		fmt.Fprintf(w, "  input %s tokens (%s cached)\n", english.Number(t.tokens.Input), english.Number(t.tokens.CachedRead))
		fmt.Fprintf(w, "  output %s tokens (%s reasoning)\n", english.Number(t.tokens.Output),
			english.Number(t.tokens.Reasoning))
	}
}

// widestLine is the columns of the longest line of text, a character a column.
func widestLine(text string) int {
	widest := 0
	for _, l := range strings.Split(text, "\n") {
		widest = max(widest, utf8.RuneCountInString(l))
	}
	return widest
}

// reportDivergences says where replayed episodes stopped following their recording; it claims
// every episode followed it only when none diverged and none ended in error (failed episodes
// are not known to have followed anything).
func reportDivergences(w io.Writer, ds []replay.Divergence, failed int) {
	switch {
	case len(ds) == 0 && failed == 0:
		fmt.Fprintln(w, "replay: every episode followed its recording")
		return
	case len(ds) == 0:
		fmt.Fprintf(w, "replay: %s ended in error (above); the others followed their recording\n",
			english.Count(failed, "episode"))
		return
	}
	fmt.Fprintf(w, "replay: %s diverged from their recording (the recorded replies were used regardless):\n",
		english.Count(len(ds), "episode"))
	for _, d := range ds {
		printLine(w, "  %s repeat %d, turn %d: %s", d.Task, d.Repeat, d.Turn, d.Detail)
	}
}

// priceFlag is a token price; setting any one makes the run's prices known, the others coming
// from the preset, else fallback.
func priceFlag(name string, dst *float64, what, fallback string) cli.Flag {
	return &cli.FloatFlag{Name: name, Destination: dst, Sources: env(name), DefaultText: "the preset's, else " + fallback,
		Usage: "USD per million " + what}
}

// overrides are the model settings given by flag or environment variable: they win over a
// preset's.
func (o runOptions) overrides() models.Overrides {
	var ov models.Overrides
	if o.isSet("reasoning-effort") {
		ov.ReasoningEffort = &o.reasoningEffort
	}
	if o.isSet("context-window") {
		window := int64(o.contextWindow)
		ov.ContextWindow = &window
	}
	if o.isSet("max-tokens") {
		maxTokens := int64(o.maxTokens)
		ov.MaxTokens = &maxTokens
	}
	for _, f := range []struct {
		name string
		usd  *float64
		dst  **float64
	}{{"price-input", &o.priceInput, &ov.Prices.Input}, {"price-output", &o.priceOutput, &ov.Prices.Output},
		{"price-cached-read", &o.priceCachedRead, &ov.Prices.CachedRead}, {"price-cached-write", &o.priceCachedWrite,
			&ov.Prices.CachedWrite}} {
		if o.isSet(f.name) {
			*f.dst = f.usd
		}
	}
	return ov
}

// describeModel names the model for the progress line: a preset with the spec it stands for.
func describeModel(s models.Settings) string {
	if s.Preset != "" {
		return s.Preset + " (" + s.Spec + ")"
	}
	return s.Spec
}
