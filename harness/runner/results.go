package runner

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
)

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
