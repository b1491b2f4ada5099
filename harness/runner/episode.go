package runner

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// runEpisode plays one episode in a fresh sandbox and grades it, telling charge the usage of
// each model call as it is answered, the judge's grading it (judge true) included; the error
// is the episode's own failure, if any (its message is also in the result).
func runEpisode(
	ctx context.Context,
	cfg Config,
	task data.Task,
	repeat int,
	tools sandbox.Tools,
	charge func(u model.Usage, judge bool),
) (runfolder.Result, error) {
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
	cfg.Player.sandbox(&spec)
	sb, err := cfg.Backend.Start(ctx, spec)
	if err != nil {
		return fail(err)
	}
	// Best effort: what a sandbox fails to remove, the next run removes (sandbox.Leftovers).
	defer func() { _ = sb.Close() }()
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
			_ = rec.Close() // the episode ended in error already, which it reports
			cfg.compress(res.Episode(), dir)
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
	out := cfg.Player.episode(ctx, sb, seat{settings: cfg.played(), tools: tools, prices: cfg.Prices,
		trajectory: rec, wire: wire, charge: func(u model.Usage) { charge(u, false) },
		turned: func(n int, command string) {
			cfg.tell(EpisodeTurn{Episode: res.Episode(), Turn: n, MaxTurns: cfg.MaxTurns, Command: command})
		}}).Run(ctx)
	rec.Unsent(out.Turns, out.Unsent)
	res.Status, res.Turns, res.ToolCalls = out.Status, out.Turns, out.ToolCalls
	res.Tokens, res.ProviderTools = out.Usage, out.ProviderTools
	res.CostUSD, res.Retries = cfg.Prices.Cost(out.Usage), rec.Retries()
	res.ModelTime, res.ToolTime = out.ModelTime.Seconds(), out.ToolTime.Seconds()
	res.Duration = time.Since(began).Seconds()
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
		res.Score, res.TP, res.FP = v.Score, v.TP, v.FP
		res.RootCausesFound, res.EntitiesDropped = v.RootCausesFound, v.EntitiesDropped
		res.Matcher, res.JudgeNote, res.Rules = v.Matcher, v.JudgeNote, v.Rules
	}
	closed = true
	if err := rec.Close(); err != nil {
		res = runfolder.Result{Task: task.ID, Repeat: repeat, Turns: res.Turns, ToolCalls: res.ToolCalls, Tokens: res.Tokens,
			CostUSD: res.CostUSD}
		return fail(fmt.Errorf("%s: %w", filepath.Join(dir, runfolder.TrajectoryFile), err))
	}
	cfg.compress(res.Episode(), dir)
	return res, out.Err
}

// compress compresses an episode's trajectory; should it fail, the plain file stays, readable
// as well, and the failure is told rather than failing an episode that was played and graded.
func (cfg Config) compress(e runfolder.Episode, dir string) {
	if err := runfolder.CompressTrajectory(dir); err != nil {
		cfg.tell(TrajectoryPlain{Episode: e, Err: err})
	}
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
