// Package runner runs every task x repeat of a dataset as episodes, in parallel, into a run
// folder (DESIGN.md): run.json, results.jsonl appended and fsynced per episode, one folder per
// episode with its submission and trajectory, and summary.json. Running again with the same
// folder resumes: finished episodes are kept, failed ones run again.
package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// Config is one run.
type Config struct {
	Out            string
	DatasetSpec    string
	Tasks          []data.Task
	Repeats        int
	Parallel       int
	ModelSpec      string
	Model          harness.Model
	Backend        sandbox.Backend
	MaxTurns       int
	CommandTimeout time.Duration
	ContextWindow  int64
	// Prices give each episode its cost; nil when the model's prices are unknown.
	Prices       *harness.Prices
	SystemPrompt string
	TaskTemplate string // the task prompt with its placeholders
	// Progress, when set, hears about each episode as it ends.
	Progress func(Result)
	// Permanent tells a model error that no retry will cure (a bad key, an unknown model): when
	// the first episodes all end in one, the run stops instead of burning through every task.
	Permanent func(error) bool
}

// earlyStop is how many first episodes failing permanently stop a run.
const earlyStop = 3

// ErrStopped marks a run that stopped early because its first episodes all failed permanently.
var ErrStopped = errors.New("stopped: the first episodes all failed with the same kind of permanent error")

// Header is run.json.
type Header struct {
	Version        string    `json:"version"`
	Dataset        string    `json:"dataset"`
	Tasks          []string  `json:"tasks"`
	Repeats        int       `json:"repeats"`
	Model          string    `json:"model"`
	MaxTurns       int       `json:"max_turns"`
	CommandTimeout string    `json:"command_timeout"`
	Sandbox        string    `json:"sandbox"`
	PromptSHA256   string    `json:"prompt_sha256"`
	Started        time.Time `json:"started"`
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
	Error           string        `json:"error,omitempty"`
}

// Version is written into run.json.
var Version = "dev"

// Run plays every episode not already finished in cfg.Out and returns the summary of all.
func Run(ctx context.Context, cfg Config) (grader.Summary, []Result, error) {
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
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
	results, err := os.OpenFile(filepath.Join(cfg.Out, "results.jsonl"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return grader.Summary{}, nil, err
	}
	defer results.Close()

	type job struct {
		task   data.Task
		repeat int
	}
	jobs := make(chan job)
	var mu sync.Mutex
	var wg sync.WaitGroup
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	finished, permanent := 0, 0
	for range max(cfg.Parallel, 1) {
		wg.Go(func() {
			for j := range jobs {
				r, err := runEpisode(ctx, cfg, j.task, j.repeat, tools.Python)
				mu.Lock()
				finished++
				if err != nil && cfg.Permanent != nil && cfg.Permanent(err) {
					permanent++
				}
				if finished == earlyStop && permanent == earlyStop {
					stop(fmt.Errorf("%w (%s)", ErrStopped, r.Error))
				}
				line, _ := json.Marshal(r)
				results.Write(append(line, '\n'))
				results.Sync() // a finished episode survives a crash
				done[key(r.Task, r.Repeat)] = r
				mu.Unlock()
				if cfg.Progress != nil {
					cfg.Progress(r)
				}
			}
		})
	}
feed:
	for _, t := range cfg.Tasks {
		for r := 1; r <= cfg.Repeats; r++ {
			if prev, ok := done[key(t.ID, r)]; ok && prev.Status != grader.StatusError {
				continue
			}
			select {
			case jobs <- job{t, r}:
			case <-ctx.Done():
				break feed
			}
		}
	}
	close(jobs)
	wg.Wait()

	ids := make([]string, len(cfg.Tasks))
	for i, t := range cfg.Tasks {
		ids[i] = t.ID
	}
	all, summary := Collect(ids, cfg.Repeats, done)
	b, _ := json.MarshalIndent(summary, "", "  ")
	if err := os.WriteFile(filepath.Join(cfg.Out, "summary.json"), b, 0o644); err != nil {
		return summary, all, err
	}
	if cause := context.Cause(ctx); ctx.Err() != nil {
		return summary, all, cause
	}
	return summary, all, nil
}

func key(task string, repeat int) string { return task + "/" + strconv.Itoa(repeat) }

// Collect lists every task x repeat in order, an episode missing from done as an error that
// was not run, and summarises them: the same numbers for a finished run and for a partial one.
func Collect(tasks []string, repeats int, done map[string]Result) ([]Result, grader.Summary) {
	var all []Result
	var perTask []grader.TaskResult
	for _, id := range tasks {
		tr := grader.TaskResult{Task: id}
		for r := 1; r <= repeats; r++ {
			res, ok := done[key(id, r)]
			if !ok {
				res = Result{Task: id, Repeat: r, Status: grader.StatusError, Error: "not run (interrupted)"}
			}
			all = append(all, res)
			tr.Episodes = append(tr.Episodes, res.toEpisode())
		}
		perTask = append(perTask, tr)
	}
	return all, grader.Summarise(perTask)
}

func (r Result) toEpisode() grader.Episode {
	return grader.Episode{Repeat: r.Repeat, Status: r.Status, Reason: r.Error,
		EpisodeScore: grader.EpisodeScore{Score: r.Score, TP: r.TP, FP: r.FP, RootCauses: r.RootCauses,
			RootCausesFound: r.RootCausesFound, Predictions: []grader.Prediction{}}}
}

// ReadResults reads the episodes finished in the run folder dir, keyed by task and repeat
// (DESIGN.md); a line cut by a crash is ignored, and the last line for an episode wins. A
// folder without results.jsonl has none.
func ReadResults(dir string) (map[string]Result, error) {
	done := map[string]Result{}
	f, err := os.Open(filepath.Join(dir, "results.jsonl"))
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
			done[key(r.Task, r.Repeat)] = r
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

// ErrConfigChanged marks a resume whose configuration differs from the run folder's.
var ErrConfigChanged = errors.New("the run folder holds a run with another configuration")

func writeHeader(cfg Config) error {
	h := Header{Version: Version, Dataset: cfg.DatasetSpec, Repeats: cfg.Repeats, Model: cfg.ModelSpec, MaxTurns: cfg.MaxTurns,
		CommandTimeout: cfg.CommandTimeout.String(), Sandbox: cfg.Backend.Name(),
		PromptSHA256: harness.PromptSHA256(cfg.SystemPrompt, cfg.TaskTemplate), Started: time.Now().UTC()}
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

// differences names the fields whose change would mix two experiments in one run.
func (h Header) differences(o Header) []string {
	var out []string
	check := func(field string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s was %v, now %v", field, a, b))
		}
	}
	check("dataset", h.Dataset, o.Dataset)
	check("tasks", h.Tasks, o.Tasks)
	check("repeats", h.Repeats, o.Repeats)
	check("model", h.Model, o.Model)
	check("max_turns", h.MaxTurns, o.MaxTurns)
	check("command_timeout", h.CommandTimeout, o.CommandTimeout)
	check("sandbox", h.Sandbox, o.Sandbox)
	check("prompt_sha256", h.PromptSHA256, o.PromptSHA256)
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
	trajectory, err := os.Create(filepath.Join(dir, "trajectory.jsonl"))
	if err != nil {
		return fail(err)
	}
	defer trajectory.Close()
	enc := json.NewEncoder(trajectory)
	ep := &harness.Episode{Model: cfg.Model, Sandbox: sb, Scratch: scratch, MaxTurns: cfg.MaxTurns, CommandTimeout: cfg.CommandTimeout,
		ContextWindow: cfg.ContextWindow, SystemPrompt: cfg.SystemPrompt,
		TaskPrompt: harness.FillPrompt(cfg.TaskTemplate, harness.PromptFacts{Workdir: sb.Workdir(), Python: python}),
		OnTurn: func(turn int, req harness.Request, reply harness.Reply, err error) {
			entry := map[string]any{"turn": turn, "summary": req.Summary, "reply": reply.Message, "usage": reply.Usage}
			if turn == 1 && !req.Summary {
				entry["prompt"] = req.Messages // the system and task prompts, once
			} else if n := len(req.Messages); n > 0 {
				entry["last_input"] = req.Messages[n-1] // the newest tool result or harness message
			}
			if err != nil {
				entry["error"] = err.Error()
			}
			enc.Encode(entry)
		}}
	out := ep.Run(ctx)
	res.Status, res.Turns, res.ToolCalls, res.Tokens = out.Status, out.Turns, out.ToolCalls, out.Usage
	res.CostUSD = cfg.Prices.Cost(out.Usage)
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
			s := gt.Score(sub.Names)
			res.Score, res.TP, res.FP, res.RootCausesFound = s.Score, s.TP, s.FP, s.RootCausesFound
		}
	}
	return res, out.Err
}
