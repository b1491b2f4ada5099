// Package runner runs every task x repeat of a dataset as episodes, in parallel, into a run
// folder (harness/vocab/runfolder): run.json, results.jsonl appended and fsynced per episode, one
// folder per episode with its submission and trajectory, and summary.json. Running again with
// the same folder resumes: finished episodes are kept, failed ones run again.
package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/workpool"
)

// Config is one run.
type Config struct {
	// Folder is the run folder, opened (and so locked) by the caller, who closes it after the
	// reports are written.
	Folder *runfolder.Folder
	// Description is what run.json says of the run that the runner does not use itself.
	Description Description
	Tasks       []data.Task
	Repeats     int
	Parallel    int
	Shard       runfolder.Shard
	// Player plays every episode: Loop, aa-grade's loop over a model, or *Agent, an agent
	// calling the model through a gateway.
	Player Player
	// Settings are what every episode is played with, whichever Player plays it (MaxTokens is
	// the output cap the model value applies, which the loop summarises against); run.json
	// records them.
	settings.Settings
	Backend sandbox.Backend
	// Limits bound each episode's sandbox (sandbox.Spec): the sandbox's, not the Settings,
	// since neither kind of episode reads them and run.json does not record them.
	Limits sandbox.Limits
	// Tools are what the caller's probe of Backend found (sandbox.ProbeTools), so that a
	// backend or image that cannot run an episode fails before it says anything of the run;
	// nil: Run probes first.
	Tools *sandbox.Tools
	// OnEnvironment, when set, hears what the sandbox's probe found before the first episode.
	OnEnvironment func(sandbox.Tools)
	// Prices give each episode its cost; nil when the model's prices are unknown.
	Prices *model.Prices
	// Replayed says the model's calls reach no provider (a replay): their usage is the
	// recording's, billed when it was recorded, so the ledger of spend records them at $0 (and
	// the budget counts nothing for them) while each episode keeps its recorded cost.
	Replayed bool
	// Grace is how long running episodes may go on once ctx is cancelled (Ctrl-C) before they
	// are stopped and recorded as unfinished; Abort, when closed, ends the grace at once.
	Grace time.Duration
	Abort <-chan struct{}
	// Progress, when set, is told about the run as it goes (the Events of progress.go), from
	// the episodes' goroutines at once.
	Progress func(Event)
	// Scorer grades each episode's submission when the episode ends (an LLM judge); nil: the
	// rules. Judge names it in run.json and the summary ("" for the rules).
	Scorer grader.Scorer
	Judge  string
	// JudgePrices price the judge's calls in the ledger of spend (nil: unknown).
	JudgePrices *model.Prices
	// FailOnError, when more than 0, stops the run once that many episodes ended in error
	// (ErrStopped); a fraction below 1 is of the episodes planned, the run stopping once more
	// than that share of them ended in error (0.1: more than one in ten).
	FailOnError float64
	// MaxCost, when more than 0, is the run's budget in USD, what the folder's earlier results
	// spent included: no episode starts once the spend plus a projection of the running ones
	// would pass it, and the running ones stop, as grader.StatusCostLimit, when the spend
	// (their calls included) reaches it (ErrBudget). CostPrior projects an episode before any
	// has a cost (the published cost a task, when known; 0 projects nothing).
	MaxCost, CostPrior float64
}

// Description is what the caller knows of a run, for run.json: where its tasks come from and
// which model answers, as the caller chose and applied them.
type Description struct {
	Dataset       string              // the dataset spec
	DatasetCommit string              // the Hub commit the tasks come from, when they do
	Selection     runfolder.Selection // how Tasks were chosen among those asked for
	Model         string              // the model spec
	// BaseURL and ReasoningEffort describe the model calls (the model value applies them).
	BaseURL, ReasoningEffort string
	// Agent describes the agent of an agent run (Config.Player an *Agent): its spec, version,
	// time limit and protocol; nil for aa-grade's loop.
	Agent *runfolder.AgentInfo
}

// played are the settings every episode is played with, as run.json records them: their
// prompt set as the player shows it to the model (an agent run's holds the agent task it
// hands over).
func (cfg Config) played() settings.Settings {
	s := cfg.Settings
	s.Prompts = cfg.Player.prompts(s.Prompts)
	return s
}

// ErrStopped marks a run that stopped because too many of its episodes ended in error
// (Config.FailOnError).
var ErrStopped = errors.New("stopped: too many episodes ended in error")

// ErrRefused marks a run that stopped because an episode met a provider's permanent refusal
// (provider.Permanent): a quota, a key, an address that every other episode would meet too.
var ErrRefused = errors.New("the provider refused for good")

// errHalted is why running episodes are stopped when the run stops on a refusal.
var errHalted = errors.New("the run stopped on a provider's permanent refusal")

// DefaultGrace is how long running episodes may finish after Ctrl-C.
const DefaultGrace = 20 * time.Second

// Run plays every episode of the run (or of its shard) not already finished in cfg.Folder and
// returns the results and summary of them all. When ctx is cancelled it starts no more
// episodes, lets running ones finish within the grace, records the rest as unfinished and
// returns the cancellation's cause. When a result or a trajectory cannot be recorded (a full
// disk) it stops at once: no more episodes start, running ones are stopped, and the error says so; every
// line recorded before stays whole.
func Run(ctx context.Context, cfg Config) (grader.Summary, []runfolder.Result, error) {
	// The sandbox is tried before anything is written: a backend or an image that cannot run
	// an episode leaves no half-started run folder (see runfolder.Folder.Close).
	if cfg.Tools == nil {
		tools, err := sandbox.ProbeTools(ctx, cfg.Backend)
		if err != nil {
			return grader.Summary{}, nil, fmt.Errorf("probe the sandbox: %w", err)
		}
		cfg.Tools = &tools
	}
	tools := *cfg.Tools
	done := map[runfolder.Episode]runfolder.Result{}
	if prev := cfg.Folder.Prev; prev != nil {
		maps.Copy(done, prev.Results)
	}
	if cfg.OnEnvironment != nil {
		cfg.OnEnvironment(tools)
	}
	if err := writeHeader(cfg, tools); err != nil {
		return grader.Summary{}, nil, err
	}
	ledger, err := startLedger(cfg.Folder)
	if err != nil {
		return grader.Summary{}, nil, err
	}

	ids := make([]string, len(cfg.Tasks))
	for i, t := range cfg.Tasks {
		ids[i] = t.ID
	}
	plan := cfg.Shard.Episodes(ids, cfg.Repeats)
	todo, finished := runfolder.Pending(plan, done)
	cfg.tell(Planned{Total: len(plan), Finished: finished, Spent: *ledger})

	// Episodes run under their own context, which outlives ctx by the grace.
	episodeCtx, cancelEpisodes := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEpisodes()
	go func() {
		select {
		case <-ctx.Done():
		case <-episodeCtx.Done():
			return
		}
		cfg.tell(Interrupted{Grace: cfg.Grace})
		grace := time.NewTimer(cfg.Grace)
		defer grace.Stop()
		why := ""
		select {
		case <-grace.C:
			why = fmt.Sprintf("the grace of %s is over", cfg.Grace)
		case <-cfg.Abort:
			why = "interrupted again"
		case <-episodeCtx.Done():
		}
		if why != "" {
			cfg.tell(Stopping{Why: why})
		}
		cancelEpisodes()
	}()

	tasks := map[string]data.Task{}
	for _, t := range cfg.Tasks {
		tasks[t.ID] = t
	}
	var mu sync.Mutex
	feedCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	failed := 0
	failLimit := errorLimit(cfg.FailOnError, len(todo))
	spend := newBudget(cfg.MaxCost, cfg.CostPrior, spentBefore(ledger), done)
	// Running episodes are stopped when the spend reaches the budget.
	budgetCtx, overBudget := context.WithCancelCause(episodeCtx)
	defer overBudget(nil)
	// Running episodes are stopped when one meets a permanent refusal; the back-offs of their
	// calls end at Ctrl-C.
	haltCtx, halt := context.WithCancelCause(budgetCtx)
	defer halt(nil)
	playCtx := provider.WithRetryStop(haltCtx, ctx.Done())
	var recordErr error // the first failure to record a result or a call: no result is recorded after it
	// Episodes not handed out when the run stops or is interrupted are left unfinished.
	workpool.Run(feedCtx, cfg.Parallel, todo, func(j runfolder.Episode) {
		mu.Lock()
		admitted := spend.admit(j)
		mu.Unlock()
		if admitted != nil {
			stop(admitted) // this episode and the rest stay to play, with a higher budget
			return
		}
		// Every call is in the ledger before the budget counts it: both count the same
		// dollars, whatever becomes of the episode.
		charge := func(u model.Usage, judge bool) {
			prices := cfg.Prices
			if judge {
				prices = cfg.JudgePrices
			}
			c := runfolder.Charge{Task: j.Task, Repeat: j.Repeat, Usage: u, CostUSD: prices.Cost(u), Judge: judge}
			if cfg.Replayed && !judge {
				c.CostUSD = new(float64) // nothing billed: the recording paid for it
			}
			recorded := cfg.Folder.Charge(c)
			if recorded == nil {
				cfg.tell(Charged{Charge: c})
			}
			mu.Lock()
			defer mu.Unlock()
			if recorded != nil {
				if recordErr == nil {
					recordErr = fmt.Errorf("the spend of %s repeat %d could not be recorded: %w", j.Task, j.Repeat, recorded)
					stop(fmt.Errorf("%w, so the run stopped (what was recorded before is kept; run the same command again to resume)",
						recordErr))
					cancelEpisodes()
				}
				return
			}
			ledger.Add(c)
			if c.CostUSD == nil {
				return
			}
			if err := spend.charge(j, *c.CostUSD); err != nil {
				stop(err)
				overBudget(err)
			}
		}
		r, err := runEpisode(playCtx, cfg, tasks[j.Task], j.Repeat, tools, charge)
		complete := r.Final() && err == nil
		switch {
		case ctx.Err() != nil && (episodeCtx.Err() != nil || errors.Is(err, provider.ErrRetryStopped)) && !complete:
			r.Status, r.Error = grader.StatusUnfinished, "the run was interrupted during this episode"
		case errors.Is(context.Cause(budgetCtx), ErrBudget) && !complete:
			r.Status, r.Error = grader.StatusCostLimit, "stopped when the run's spend reached its budget (--max-cost); a "+
				"resume with a higher one plays it again"
		case errors.Is(context.Cause(haltCtx), errHalted) && !complete && !provider.Permanent(err):
			r.Status, r.Error = grader.StatusUnfinished, "stopped when another episode met the provider's permanent refusal; "+
				"a resume plays it again"
		}
		mu.Lock()
		spend.end(r)
		if provider.Permanent(err) && !errors.Is(context.Cause(feedCtx), ErrRefused) {
			// Every other episode would meet the same: stop now, not after each has tried.
			stop(fmt.Errorf("%s repeat %d: %w: %w; the run stopped (fix the cause, then run the same command again to resume)",
				r.Task, r.Repeat, ErrRefused, err))
			halt(errHalted)
		}
		if r.Status == grader.StatusError {
			failed++
		}
		if failLimit > 0 && failed == failLimit {
			stop(fmt.Errorf("%w: %d of the %s planned, the last %s repeat %d: %s", ErrStopped, failed,
				english.Count(len(todo), "episode"), r.Task, r.Repeat, r.Error))
		}
		if errors.Is(err, runfolder.ErrNotRecorded) && recordErr == nil {
			stop(fmt.Errorf(
				"%s repeat %d: %w, so the run stopped (the episodes recorded before it are kept; run the same command "+
					"again to resume)", r.Task, r.Repeat, err))
			cancelEpisodes()
		}
		if recordErr == nil {
			if recordErr = cfg.Folder.Append(r); recordErr != nil {
				stop(fmt.Errorf(
					"the result of %s repeat %d could not be recorded, so the run stopped (the results recorded before it are kept; "+
						"run the same command again to resume): %w", r.Task, r.Repeat, recordErr))
				cancelEpisodes() // what they find could not be recorded either
			} else {
				done[j] = r
			}
		}
		recorded := recordErr == nil
		mu.Unlock()
		if recorded {
			cfg.tell(EpisodeFinished{Result: r})
		}
	})

	all, summary := runfolder.Collect(plan, done, cfg.Judge)
	err = cfg.Folder.WriteSummary(summary, ledger)
	if feedCtx.Err() != nil { // stopped or interrupted: the cause first
		err = errors.Join(context.Cause(feedCtx), err)
	}
	return summary, all, err
}

// errorLimit is the number of episodes in error that stops a run of planned episodes
// (Config.FailOnError): failOnError itself from 1, else the first count over that share of
// planned; 0 never.
func errorLimit(failOnError float64, planned int) int {
	switch {
	case failOnError <= 0:
		return 0
	case failOnError >= 1:
		return int(failOnError)
	}
	return int(failOnError*float64(planned)) + 1
}
