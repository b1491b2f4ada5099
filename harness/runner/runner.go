// Package runner runs every task x repeat of a dataset as episodes, in parallel, into a run
// folder (DESIGN.md): run.json, results.jsonl appended and fsynced per episode, one folder per
// episode with its submission and trajectory, and summary.json. Running again with the same
// folder resumes: finished episodes are kept, failed ones run again.
package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// Config is one run.
type Config struct {
	Out           string
	DatasetSpec   string
	DatasetCommit string // the Hub commit the tasks come from, when they do
	Tasks         []data.Task
	Repeats       int
	Parallel      int
	Shard         Shard
	ModelSpec     string
	Model         harness.Model
	// BaseURL, ReasoningEffort and MaxTokens describe the model calls for run.json (the model
	// value already applies them).
	BaseURL         string
	ReasoningEffort string
	MaxTokens       int
	Backend         sandbox.Backend
	MaxTurns        int
	CommandTimeout  time.Duration
	ContextWindow   int64
	// Prices give each episode its cost; nil when the model's prices are unknown.
	Prices       *harness.Prices
	SystemPrompt string
	TaskTemplate string // the task prompt with its placeholders
	// Grace is how long running episodes may go on once ctx is cancelled (Ctrl-C) before they
	// are stopped and recorded as unfinished; Abort, when closed, ends the grace at once.
	Grace time.Duration
	Abort <-chan struct{}
	// Progress, when set, hears about the run as it goes.
	Progress Progress
	// Scorer grades each episode's submission when the episode ends (an LLM judge); nil: the
	// rules. Judge names it in run.json and the summary ("" for the rules).
	Scorer grader.Scorer
	Judge  string
	// Permanent tells a model error that no retry will cure (a bad key, an unknown model): when
	// the first episodes all end in one, the run stops instead of burning through every task.
	Permanent func(error) bool
}

// Progress hears about a run as it goes. Calls come from the episodes' goroutines at once.
type Progress interface {
	// Plan tells how many episodes the run (or shard) has and which are already finished.
	Plan(total int, finished []Result)
	// Turn tells an episode made a model call; command is the last shell command it asked
	// for, if any ("" on the turn it starts).
	Turn(task string, repeat, turn, maxTurns int, command string)
	// Finished tells an episode ended.
	Finished(Result)
}

// earlyStop is how many first episodes failing permanently stop a run.
const earlyStop = 3

// ErrStopped marks a run that stopped early because its first episodes all failed permanently.
var ErrStopped = errors.New("stopped: the first episodes all failed with the same kind of permanent error")

// Header is run.json.
type Header struct {
	Version       string   `json:"version"`
	Revision      string   `json:"revision,omitempty"` // the VCS revision aa-grade was built from
	Dataset       string   `json:"dataset"`
	DatasetCommit string   `json:"dataset_commit,omitempty"` // for a Hub dataset, the commit resolved`
	Tasks         []string `json:"tasks"`
	Repeats       int      `json:"repeats"`
	Shard         string   `json:"shard,omitempty"` // "I/N" for one of N shards
	Model         string   `json:"model"`
	// BaseURL is where the model was called (never the key). A resume does not compare it: the
	// same model behind another proxy or mirror is the same experiment.
	BaseURL         string    `json:"base_url,omitempty"`
	ReasoningEffort string    `json:"reasoning_effort,omitempty"`
	MaxTokens       int       `json:"max_tokens,omitempty"`
	ContextWindow   int64     `json:"context_window,omitempty"`
	MaxTurns        int       `json:"max_turns"`
	CommandTimeout  string    `json:"command_timeout"`
	Sandbox         string    `json:"sandbox"`
	PromptSHA256    string    `json:"prompt_sha256"`
	Judge           string    `json:"judge,omitempty"`
	Started         time.Time `json:"started"`
	// Prices are the run's token prices (null: unknown), the latest when a resume changed them.
	// A resume does not compare them: prices change no episode, each line of results.jsonl
	// keeps the cost computed when it was written, and correcting a price must not make paid
	// episodes run again.
	Prices *harness.Prices `json:"prices"`
}

// Result is one line of results.jsonl.
type Result struct {
	Task   string  `json:"task"`
	Repeat int     `json:"repeat"`
	Status string  `json:"status"`
	Score  float64 `json:"score"`
	TP     int     `json:"tp"`
	FP     int     `json:"fp"`
	// RootCauses and RootCausesFound are the episode's recall, for the summary.
	RootCauses      int           `json:"root_causes"`
	RootCausesFound int           `json:"root_causes_found"`
	Turns           int           `json:"turns"`
	ToolCalls       int           `json:"tool_calls"`
	Tokens          harness.Usage `json:"tokens"`
	CostUSD         *float64      `json:"cost_usd"` // null when the model's prices are unknown
	Duration        float64       `json:"duration_s"`
	ModelTime       float64       `json:"model_s"`
	ToolTime        float64       `json:"tool_s"`
	Retries         int           `json:"retries"` // model calls retried, all attempts counted
	Error           string        `json:"error,omitempty"`
	// Matcher, JudgeNote and Rules say who graded the episode (grader.Verdict).
	Matcher   string             `json:"matcher,omitempty"`
	JudgeNote string             `json:"judge_note,omitempty"`
	Rules     *grader.RulesGrade `json:"rules,omitempty"`
}

// Final reports whether a result stands: error and unfinished episodes run again on resume.
func (r Result) Final() bool {
	return r.Status != grader.StatusError && r.Status != grader.StatusUnfinished
}

// Version is written into run.json.
var Version = "dev"

// DefaultGrace is how long running episodes may finish after Ctrl-C.
const DefaultGrace = 20 * time.Second

// Run plays every episode of the run (or of its shard) not already finished in cfg.Out and
// returns the results and summary of them all. When ctx is cancelled it starts no more
// episodes, lets running ones finish within the grace, records the rest as unfinished and
// returns the cancellation's cause.
func Run(ctx context.Context, cfg Config) (grader.Summary, []Result, error) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return grader.Summary{}, nil, err
	}
	path := filepath.Join(cfg.Out, ResultsFile)
	if err := dropCutLine(path); err != nil {
		return grader.Summary{}, nil, err
	}
	done, err := ReadResults(cfg.Out)
	if err != nil {
		return grader.Summary{}, nil, err
	}
	if err := writeHeader(cfg); err != nil {
		return grader.Summary{}, nil, err
	}
	tools, err := sandbox.ProbeTools(ctx, cfg.Backend)
	if err != nil {
		return grader.Summary{}, nil, fmt.Errorf("probe the sandbox: %w", err)
	}
	results, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return grader.Summary{}, nil, err
	}
	defer results.Close()

	ids := make([]string, len(cfg.Tasks))
	for i, t := range cfg.Tasks {
		ids[i] = t.ID
	}
	plan := cfg.Shard.Episodes(ids, cfg.Repeats)
	var todo []Episode
	var finished []Result
	for _, e := range plan {
		if prev, ok := done[e.Key()]; ok && prev.Final() {
			finished = append(finished, prev)
		} else {
			todo = append(todo, e)
		}
	}
	if cfg.Progress != nil {
		cfg.Progress.Plan(len(plan), finished)
	}

	// Episodes run under their own context, which outlives ctx by the grace.
	episodeCtx, cancelEpisodes := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelEpisodes()
	go func() {
		select {
		case <-ctx.Done():
		case <-episodeCtx.Done():
			return
		}
		grace := time.NewTimer(cfg.Grace)
		defer grace.Stop()
		select {
		case <-grace.C:
		case <-cfg.Abort:
		case <-episodeCtx.Done():
		}
		cancelEpisodes()
	}()

	tasks := map[string]data.Task{}
	for _, t := range cfg.Tasks {
		tasks[t.ID] = t
	}
	jobs := make(chan Episode)
	var mu sync.Mutex
	var wg sync.WaitGroup
	feedCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	ended, permanent := 0, 0
	for range max(cfg.Parallel, 1) {
		wg.Go(func() {
			for j := range jobs {
				r, err := runEpisode(episodeCtx, cfg, tasks[j.Task], j.Repeat, tools.Python)
				if ctx.Err() != nil && episodeCtx.Err() != nil && !(r.Final() && err == nil) {
					r.Status, r.Error = grader.StatusUnfinished, "the run was interrupted during this episode"
				}
				mu.Lock()
				ended++
				if err != nil && cfg.Permanent != nil && cfg.Permanent(err) {
					permanent++
				}
				if ended == earlyStop && permanent == earlyStop {
					stop(fmt.Errorf("%w (%s)", ErrStopped, r.Error))
				}
				line, _ := json.Marshal(r)
				results.Write(append(line, '\n'))
				results.Sync() // a finished episode survives a crash
				done[j.Key()] = r
				mu.Unlock()
				if cfg.Progress != nil {
					cfg.Progress.Finished(r)
				}
			}
		})
	}
feed:
	for _, e := range todo {
		select {
		case jobs <- e:
		case <-feedCtx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	all, summary := Collect(plan, done, cfg.Judge)
	b, _ := json.MarshalIndent(summary, "", "  ")
	if err := os.WriteFile(filepath.Join(cfg.Out, "summary.json"), b, 0o644); err != nil {
		return summary, all, err
	}
	if feedCtx.Err() != nil {
		return summary, all, context.Cause(feedCtx)
	}
	return summary, all, nil
}

// Collect lists a run's episodes in order, one missing from done as unfinished, and
// summarises them: the same numbers for a finished run and for a partial one.
func Collect(plan []Episode, done map[string]Result, judge string) ([]Result, grader.Summary) {
	all := make([]Result, 0, len(plan))
	for _, e := range plan {
		res, ok := done[e.Key()]
		if !ok {
			res = Result{Task: e.Task, Repeat: e.Repeat, Status: grader.StatusUnfinished, Error: "not run (the run was interrupted or has not reached it)"}
		}
		all = append(all, res)
	}
	return all, Summarise(all, judge)
}

// Summarise grades a run's results: per task in the order they come, repeats in order, with
// the judge's statistics when a judge graded them.
func Summarise(results []Result, judge string) grader.Summary {
	var perTask []grader.TaskResult
	index := map[string]int{}
	for _, r := range results {
		i, ok := index[r.Task]
		if !ok {
			i = len(perTask)
			index[r.Task] = i
			perTask = append(perTask, grader.TaskResult{Task: r.Task})
		}
		perTask[i].Episodes = append(perTask[i].Episodes, r.toEpisode())
	}
	for _, t := range perTask {
		slices.SortFunc(t.Episodes, func(a, b grader.Episode) int { return a.Repeat - b.Repeat })
	}
	summary := grader.Summarise(perTask)
	if judge != "" {
		summary.Judge = grader.JudgeSummary(judge, perTask)
	}
	return summary
}

// ResultsFile is the run folder's log of finished episodes.
const ResultsFile = "results.jsonl"

func (r Result) toEpisode() grader.Episode {
	return grader.Episode{Repeat: r.Repeat, Status: r.Status, Reason: r.Error, Verdict: grader.Verdict{
		EpisodeScore: grader.EpisodeScore{Score: r.Score, TP: r.TP, FP: r.FP, RootCauses: r.RootCauses,
			RootCausesFound: r.RootCausesFound, Predictions: []grader.Prediction{}},
		Matcher: r.Matcher, JudgeNote: r.JudgeNote, Rules: r.Rules}}
}

// ReadResults reads the episodes finished in the run folder dir, keyed by task and repeat
// (DESIGN.md); a line cut by a crash is ignored, and the last line for an episode wins. A
// folder without results.jsonl has none.
func ReadResults(dir string) (map[string]Result, error) {
	done := map[string]Result{}
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if errors.Is(err, os.ErrNotExist) {
		return done, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var r Result
		if json.Unmarshal(sc.Bytes(), &r) == nil && r.Task != "" {
			done[Episode{r.Task, r.Repeat}.Key()] = r
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	return done, nil
}

// ReadHeader reads the run folder dir's run.json; unknown fields are ignored, so folders
// written by newer versions still read.
func ReadHeader(dir string) (Header, error) {
	path := filepath.Join(dir, "run.json")
	b, err := os.ReadFile(path)
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// dropCutLine removes a last line that a crash cut short, so the next result appended starts
// a line of its own instead of being glued to the remains.
func dropCutLine(path string) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) || (err == nil && (len(b) == 0 || b[len(b)-1] == '\n')) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Truncate(path, int64(bytes.LastIndexByte(b, '\n')+1)); err != nil {
		return fmt.Errorf("drop the cut last line of %s: %w", path, err)
	}
	return nil
}

// ErrConfigChanged marks a resume whose configuration differs from the run folder's.
var ErrConfigChanged = errors.New("the run folder holds a run with another configuration")

func writeHeader(cfg Config) error {
	h := Header{Version: Version, Revision: revision(), Dataset: cfg.DatasetSpec, DatasetCommit: cfg.DatasetCommit, Repeats: cfg.Repeats,
		Shard: cfg.Shard.String(), Model: cfg.ModelSpec, BaseURL: cfg.BaseURL, ReasoningEffort: cfg.ReasoningEffort,
		MaxTokens: cfg.MaxTokens, ContextWindow: cfg.ContextWindow, MaxTurns: cfg.MaxTurns,
		CommandTimeout: cfg.CommandTimeout.String(), Sandbox: cfg.Backend.Name(),
		PromptSHA256: harness.PromptSHA256(cfg.SystemPrompt, cfg.TaskTemplate), Prices: cfg.Prices, Judge: cfg.Judge, Started: time.Now().UTC()}
	for _, t := range cfg.Tasks {
		h.Tasks = append(h.Tasks, t.ID)
	}
	prev, err := ReadHeader(cfg.Out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		if diff := prev.differences(h); len(diff) > 0 {
			return fmt.Errorf("%w (%s): use another --out, or the same flags", ErrConfigChanged, strings.Join(diff, "; "))
		}
		h.Started = prev.Started
	}
	b, _ := json.MarshalIndent(h, "", "  ")
	return os.WriteFile(filepath.Join(cfg.Out, "run.json"), b, 0o644)
}

// revision is the VCS revision of this build ("" when unknown), with "+dirty" for a build from
// a modified tree.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// differences names the fields whose change would mix two experiments in one run.
func (h Header) differences(o Header) []string {
	var out []string
	check := func(field string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s was %v, now %v", field, a, b))
		}
	}
	check("dataset", h.Dataset, o.Dataset)
	check("dataset_commit", h.DatasetCommit, o.DatasetCommit)
	check("tasks", h.Tasks, o.Tasks)
	check("repeats", h.Repeats, o.Repeats)
	check("shard", h.Shard, o.Shard)
	check("model", h.Model, o.Model)
	check("reasoning_effort", h.ReasoningEffort, o.ReasoningEffort)
	check("max_tokens", h.MaxTokens, o.MaxTokens)
	check("context_window", h.ContextWindow, o.ContextWindow)
	check("max_turns", h.MaxTurns, o.MaxTurns)
	check("command_timeout", h.CommandTimeout, o.CommandTimeout)
	check("sandbox", h.Sandbox, o.Sandbox)
	check("prompt_sha256", h.PromptSHA256, o.PromptSHA256)
	check("judge", h.Judge, o.Judge)
	return out
}

// runEpisode plays one episode in a fresh sandbox and grades it; the error is the episode's
// own failure, if any (its message is also in the result).
func runEpisode(ctx context.Context, cfg Config, task data.Task, repeat int, python map[string]string) (Result, error) {
	began := time.Now()
	res := Result{Task: task.ID, Repeat: repeat}
	fail := func(err error) (Result, error) {
		res.Status, res.Error, res.Duration = grader.StatusError, err.Error(), time.Since(began).Seconds()
		return res, err
	}
	dir := filepath.Join(cfg.Out, "episodes", task.ID, strconv.Itoa(repeat))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail(err)
	}
	scratch, err := os.MkdirTemp("", "aa-grade-episode-")
	if err != nil {
		return fail(err)
	}
	defer os.RemoveAll(scratch)
	sb, err := cfg.Backend.Start(ctx, sandbox.Spec{Snapshot: task.Dir, Hide: []string{data.GroundTruthFile}, Scratch: scratch})
	if err != nil {
		return fail(err)
	}
	defer sb.Close()
	os.Remove(filepath.Join(dir, harness.TrajectoryFile+".zst")) // an earlier attempt's
	trajectory, err := os.Create(filepath.Join(dir, harness.TrajectoryFile))
	if err != nil {
		return fail(err)
	}
	defer func() { // after grading: the judge's calls are recorded too
		trajectory.Close()
		harness.CompressTrajectory(dir) // best effort: the plain file stays readable
	}()
	rec := newTrajectory(trajectory)
	ctx = model.WithRecorder(harness.WithEpisode(ctx, harness.EpisodeID{Task: task.ID, Repeat: repeat}), rec.wire)
	ep := &harness.Episode{Model: cfg.Model, Sandbox: sb, Scratch: scratch, MaxTurns: cfg.MaxTurns, CommandTimeout: cfg.CommandTimeout,
		ContextWindow: cfg.ContextWindow, SystemPrompt: cfg.SystemPrompt,
		TaskPrompt: harness.FillPrompt(cfg.TaskTemplate, harness.PromptFacts{Workdir: sb.Workdir(), Python: python}),
		OnTurn: func(n int, req harness.Request, reply harness.Reply, err error) {
			rec.turn(n, req, reply, err)
			if cfg.Progress != nil {
				cfg.Progress.Turn(task.ID, repeat, n, cfg.MaxTurns, lastCommand(reply.Message))
			}
		}}
	out := ep.Run(ctx)
	res.Status, res.Turns, res.ToolCalls, res.Tokens = out.Status, out.Turns, out.ToolCalls, out.Usage
	res.CostUSD, res.Retries = cfg.Prices.Cost(out.Usage), rec.retries
	res.ModelTime, res.ToolTime, res.Duration = out.ModelTime.Seconds(), out.ToolTime.Seconds(), time.Since(began).Seconds()
	if out.Err != nil {
		res.Error = out.Err.Error()
	}
	gt, err := grader.ParseGroundTruth(task.GroundTruth)
	if err != nil {
		return fail(fmt.Errorf("ground truth of %s: %w", task.ID, err))
	}
	res.RootCauses = gt.RootCauseSets()
	if out.Status == harness.StatusOK {
		if err := os.WriteFile(filepath.Join(dir, harness.SubmissionFile), out.Submission, 0o644); err != nil {
			return fail(err)
		}
		sub, err := grader.ReadSubmission(out.Submission)
		if err != nil {
			res.Status, res.Error = grader.StatusInvalid, err.Error()
		} else {
			score := cfg.Scorer
			if score == nil {
				score = grader.Rules
			}
			v, err := score(ctx, grader.Task{ID: task.ID, GroundTruth: task.GroundTruth}, gt, sub.Names)
			if err != nil {
				return fail(err) // interrupted while the judge was asked: run it again
			}
			res.Score, res.TP, res.FP, res.RootCausesFound = v.Score, v.TP, v.FP, v.RootCausesFound
			res.Matcher, res.JudgeNote, res.Rules = v.Matcher, v.JudgeNote, v.Rules
		}
	}
	return res, out.Err
}

// lastCommand is the last shell command a reply asks for, "" when it asks for none.
func lastCommand(m harness.Message) string {
	for i := len(m.ToolCalls) - 1; i >= 0; i-- {
		var args struct {
			Cmd string `json:"cmd"`
		}
		if c := m.ToolCalls[i]; c.Name == sandbox.ShellToolName && json.Unmarshal([]byte(c.Arguments), &args) == nil {
			return args.Cmd
		}
	}
	return ""
}
