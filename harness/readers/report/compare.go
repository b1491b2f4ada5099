package report

import (
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/english"
)

// Versus is a run compared with the first run of a report (grader.Compare): the paired
// per-task difference, its interval and p-value, and what was left out of the pairing.
type Versus struct {
	// Against is the folder of the first run, the one compared with.
	Against string `json:"against"`
	grader.Comparison
	// NoInterval says why CI95 and PValue are null ("" when they are given).
	NoInterval string `json:"no_interval,omitempty"`
	// Warning says which tasks and repeats the pairing left out ("" when none).
	Warning string `json:"warning,omitempty"`
}

// TestNote names the statistics of a comparison, for every report that shows one.
const TestNote = "Paired by task: the difference is the mean, over the tasks both runs ended, of the run's task " +
	"score minus the first run's (over the repeats both ended; episodes in error or not run are left out); 95% CI: " +
	"percentile bootstrap over those tasks; p-value: two-sided paired sign-flip permutation test."

// CompareRuns compares each run after the first with the first; its first element is nil,
// as is every element when there is one run.
func CompareRuns(runs []*Run) []*Versus {
	out := make([]*Versus, len(runs))
	if len(runs) < 2 {
		return out
	}
	first := endedTasks(runs[0])
	for i, r := range runs[1:] {
		v := &Versus{Against: runs[0].Dir, Comparison: grader.Compare(first, endedTasks(r))}
		switch {
		case v.Tasks == 0:
			v.NoInterval = "no task ended in both runs"
		case v.CI95 == nil:
			v.NoInterval = fmt.Sprintf("fewer than %d shared tasks", grader.MinTasksForInterval)
		}
		v.Warning = leftOut(v.Comparison, runs[0].Dir, r.Dir)
		out[i+1] = v
	}
	return out
}

// endedTasks are a run's tasks with only the episodes that ended: an episode in error or not
// run yet says nothing of the model, so it is not paired with the other run's.
func endedTasks(r *Run) []grader.TaskResult {
	var out []grader.TaskResult
	for _, t := range r.Summary.PerTask {
		ended := grader.TaskResult{Task: t.Task}
		for _, e := range t.Episodes {
			if e.Status != grader.StatusError && e.Status != grader.StatusUnfinished &&
				e.Status != grader.StatusCostLimit {
				ended.Episodes = append(ended.Episodes, e)
			}
		}
		if len(ended.Episodes) > 0 {
			out = append(out, ended)
		}
	}
	return out
}

// leftOut says what a comparison could not pair: tasks only one run ended, and shared tasks
// compared over fewer repeats than one of the runs has.
func leftOut(c grader.Comparison, a, b string) string {
	var parts []string
	if n := len(c.OnlyA); n > 0 {
		parts = append(parts, fmt.Sprintf("%s only in %s", english.Count(n, "task"), a))
	}
	if n := len(c.OnlyB); n > 0 {
		parts = append(parts, fmt.Sprintf("%s only in %s", english.Count(n, "task"), b))
	}
	var s string
	if len(parts) > 0 {
		s = "the runs cover different tasks: " + strings.Join(parts, " and ") + " left out"
	}
	if n := len(c.UnevenRepeats); n > 0 {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%s compared over the repeats both ended only (%s)", english.Count(n, "shared task"),
			OneLine(strings.Join(c.UnevenRepeats, ", "), 200))
	}
	return s
}

// Text is the comparison in a line: "+0.125 (95% CI -0.050 to +0.300, p 0.210) over 12
// tasks x 3 repeats".
func (v Versus) Text() string {
	over := fmt.Sprintf("over %s x %s", english.Count(v.Tasks, "task"), english.Count(v.Repeats, "repeat"))
	if v.NoInterval != "" {
		return fmt.Sprintf("%+.3f (95%% CI n/a, p n/a: %s) %s", v.Difference, v.NoInterval, over)
	}
	return fmt.Sprintf("%+.3f (95%% CI %s, p %s) %s", v.Difference, v.IntervalText(), v.PValueText(), over)
}

// IntervalText is the interval of the difference, or "n/a".
func (v Versus) IntervalText() string {
	if v.CI95 == nil {
		return "n/a"
	}
	return fmt.Sprintf("%+.3f to %+.3f", v.CI95[0], v.CI95[1])
}

// PValueText is the p-value to three decimals ("<0.001" below them), or "n/a".
func (v Versus) PValueText() string {
	switch {
	case v.PValue == nil:
		return "n/a"
	case *v.PValue < 0.001:
		return "<0.001"
	}
	return fmt.Sprintf("%.3f", *v.PValue)
}

// PartialNote explains the blank cells of results that lack some repeats of some tasks, in
// every table that has them.
const PartialNote = "Blank: episodes these results do not hold (another shard's, or left out by --tasks or " +
	"--repeats); aa-grade merge joins the folders of a sharded run into one."

// Overviews sums up each run, those after the first with their comparison with the first.
func Overviews(runs []*Run) []Overview {
	versus := CompareRuns(runs)
	out := make([]Overview, len(runs))
	for i, r := range runs {
		out[i] = r.Overview()
		out[i].VersusFirst = versus[i]
	}
	return out
}
