package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// runEpisode plays one episode in a fresh sandbox and grades it, telling charge the usage of
// each model call as it is answered, the judge's grading it (judge true) included; the error
// is the episode's own failure, if any (its message is also in the result).
func runEpisode(ctx context.Context, cfg Config, task data.Task, repeat int, tools sandbox.Tools, charge func(u model.Usage, judge bool)) (runfolder.Result, error) {
	began := time.Now()
	res := runfolder.Result{Task: task.ID, Repeat: repeat}
	cfg.tell(EpisodeStarted{Episode: res.Episode()})
	fail := func(err error) (runfolder.Result, error) {
		res.Status, res.Error, res.Duration = grader.StatusError, err.Error(), time.Since(began).Seconds()
		return res, err
	}
	dir, err := cfg.Folder.NewEpisode(res.Episode())
	if err != nil {
		return fail(err)
	}
	scratch, removeScratch, err := sandbox.NewScratch()
	if err != nil {
		return fail(err)
	}
	defer removeScratch()
	spec := sandbox.Spec{Snapshot: task.Dir, Hide: []string{data.GroundTruthFile}, Scratch: scratch, Limits: cfg.Limits}
	if cfg.Agent != nil {
		spec.Relay, spec.Programs, spec.AgentDir = agentrun.Relay(), cfg.Agent.Install.Shown(), cfg.Agent.Dir
	}
	sb, err := cfg.Backend.Start(ctx, spec)
	if err != nil {
		return fail(err)
	}
	defer sb.Close()
	// An episode whose trajectory cannot be written is stopped at once.
	ctx, stopEpisode := context.WithCancelCause(ctx)
	defer stopEpisode(nil)
	rec, err := cfg.Folder.NewTrajectory(res.Episode(), stopEpisode)
	if err != nil {
		return fail(err)
	}
	closed := false
	defer func() { // after grading: the judge's calls are recorded too
		if !closed {
			rec.Close()
			runfolder.CompressTrajectory(dir) // best effort: the plain file stays readable
		}
	}()
	wire := rec.Event
	if cfg.Progress != nil {
		wire = func(e model.Event) {
			rec.Event(e)
			if w, ok := waitOf(e, time.Now()); ok {
				cfg.Progress(EpisodeWaiting{Episode: res.Episode(), Wait: w})
			}
		}
	}
	ctx = model.WithRecorder(model.WithEpisode(ctx, model.EpisodeID{Task: task.ID, Repeat: repeat}), wire)
	var out loop.Outcome
	if cfg.Agent != nil {
		out = playAgent(ctx, cfg, sb, tools, rec, wire, func(u model.Usage) { charge(u, false) }, func(n int, reply model.Reply) {
			if cfg.Progress != nil {
				cfg.Progress(EpisodeTurn{Episode: res.Episode(), Turn: n, MaxTurns: cfg.MaxTurns, Command: agents.Command(reply.Message)})
			}
		})
	} else {
		ep := &loop.Episode{Model: cfg.Model, Sandbox: sb, MaxTurns: cfg.MaxTurns, CommandTimeout: cfg.CommandTimeout,
			Loop: cfg.loop(), MaxTokens: int64(cfg.MaxTokens), ContextWindow: cfg.ContextWindow, Prompts: cfg.Prompts, Tools: tools,
			OnTurn: func(n int, req model.Request, reply model.Reply, err error) {
				rec.Turn(n, req, reply, err)
				charge(reply.Usage, false)
				if cfg.Progress != nil {
					cfg.Progress(EpisodeTurn{Episode: res.Episode(), Turn: n, MaxTurns: cfg.MaxTurns,
						Command: lastCommand(cfg.Prompts.ShellToolName(), reply.Message)})
				}
			}}
		out = ep.Run(ctx)
	}
	rec.Unsent(out.Turns, out.Unsent)
	res.Status, res.Turns, res.ToolCalls, res.Tokens, res.ProviderTools = out.Status, out.Turns, out.ToolCalls, out.Usage, out.ProviderTools
	res.CostUSD, res.Retries = cfg.Prices.Cost(out.Usage), rec.Retries()
	res.ModelTime, res.ToolTime, res.Duration = out.ModelTime.Seconds(), out.ToolTime.Seconds(), time.Since(began).Seconds()
	if out.Err != nil {
		res.Error = out.Err.Error()
	} else {
		res.Error = out.Reason // how an episode that is not an error ended, when there is more to say
	}
	gt, err := grader.ParseGroundTruth(task.GroundTruth)
	if err != nil {
		return fail(fmt.Errorf("ground truth of %s: %w", task.ID, err))
	}
	res.RootCauses = gt.RootCauseSets()
	if out.Status == grader.StatusOK { // the loop accepted only a submission the grader reads
		if err := cfg.Folder.WriteSubmission(res.Episode(), out.Submission); err != nil {
			return fail(err)
		}
		score := cfg.Scorer
		if score == nil {
			score = grader.Rules
		}
		judged := models.WithAsked(ctx, func(u model.Usage) { charge(u, true) }) // the judge's calls are the run's spend too
		v, err := score(judged, grader.Task{ID: task.ID, GroundTruth: task.GroundTruth}, gt, out.Entities)
		if err != nil {
			return fail(err) // interrupted while the judge was asked: run it again
		}
		res.Score, res.TP, res.FP, res.RootCausesFound, res.EntitiesDropped = v.Score, v.TP, v.FP, v.RootCausesFound, v.EntitiesDropped
		res.Matcher, res.JudgeNote, res.Rules = v.Matcher, v.JudgeNote, v.Rules
	}
	closed = true
	if err := rec.Close(); err != nil {
		res = runfolder.Result{Task: task.ID, Repeat: repeat, Turns: res.Turns, ToolCalls: res.ToolCalls, Tokens: res.Tokens, CostUSD: res.CostUSD}
		return fail(fmt.Errorf("%s: %w", filepath.Join(dir, runfolder.TrajectoryFile), err))
	}
	runfolder.CompressTrajectory(dir) // best effort: the plain file stays readable
	return res, out.Err
}

// playAgent plays an agent run's episode (cfg.Agent) in sb: its model calls go through a
// gateway that records them with wire, each followed by its turn record as the loop's are;
// used hears each call's usage as it ends (for the budget), turned each turn's number and
// reply once recorded (for the live line).
func playAgent(ctx context.Context, cfg Config, sb sandbox.Sandbox, tools sandbox.Tools, rec *runfolder.Trajectory,
	wire func(model.Event), used func(model.Usage), turned func(int, model.Reply)) loop.Outcome {
	a := cfg.Agent
	ep := &agentrun.Episode{Agent: a.Agent, Sandbox: sb, Tools: tools, Prompts: cfg.prompts(), MaxTurns: cfg.MaxTurns,
		CommandTimeout: cfg.CommandTimeout, Timeout: a.Timeout, Ended: rec.Agent, Install: a.Install,
		Gateway: gateway.Config{Model: a.Model, Upstream: a.Upstream, HTTP: a.HTTP, Limit: a.Limit, Prices: cfg.Prices, Caps: a.Caps,
			ProviderTools: a.ProviderTools, Record: wire, Used: used, RetryStop: provider.RetryStopOf(ctx), Budget: a.RetryTime,
			Turn: func(n int, req model.Request, reply model.Reply, err error) {
				rec.Turn(n, req, reply, err)
				turned(n, reply)
			}}}
	return ep.Run(ctx)
}

// lastCommand is the last command a reply asks the shell tool (named shell) for, "" when it
// asks for none.
func lastCommand(shell string, m model.Message) string {
	for i := len(m.ToolCalls) - 1; i >= 0; i-- {
		if c := m.ToolCalls[i]; c.Name == shell {
			if args, err := model.ParseShellArgs(c.Arguments); err == nil {
				if args.Cmd == nil {
					return ""
				}
				return *args.Cmd
			}
		}
	}
	return ""
}
