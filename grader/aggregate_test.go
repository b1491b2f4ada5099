package grader

import (
	"fmt"
	"math"
	"testing"
)

func episode(repeat int, score float64, found, rootCauses, tp, fp int) Episode {
	return Episode{Repeat: repeat, Status: StatusOK, Verdict: Verdict{Matcher: MatcherRules, EpisodeScore: EpisodeScore{
		Score: score, TP: tp, FP: fp, RootCauses: rootCauses, RootCausesFound: found}}}
}

func TestSummariseHeadline(t *testing.T) {
	tasks := []TaskResult{
		{Task: "a", Episodes: []Episode{episode(1, 1, 1, 1, 1, 0), episode(2, 0.5, 1, 1, 1, 1), episode(3, 0, 0, 1, 0, 2)}},
		{Task: "b", Episodes: []Episode{episode(1, 0, 0, 2, 1, 0), episode(2, 0, 0, 2, 0, 0), {Repeat: 3, Status: StatusMissing}}},
	}
	s := Summarise(tasks)
	if s.Tasks != 2 {
		t.Errorf("%d tasks, want 2", s.Tasks)
	}
	if s.Repeats != 3 {
		t.Errorf("%d repeats, want 3", s.Repeats)
	}
	if s.Episodes != 6 {
		t.Errorf("%d episodes, want 6", s.Episodes)
	}
	if t.Failed() {
		t.FailNow()
	}
	if math.Abs(s.Score-1.5/6) > 1e-12 {
		t.Fatalf("score = %v, want %v", s.Score, 1.5/6)
	}
	if s.PerTask[0].Score != 0.5 || s.PerTask[1].Score != 0 {
		t.Fatalf("task scores = %v, %v", s.PerTask[0].Score, s.PerTask[1].Score)
	}
	if math.Abs(s.FullRecallRate-2.0/6) > 1e-12 {
		t.Errorf("full recall in %v of the episodes, want 2/6", s.FullRecallRate)
	}
	if p := s.FullRecallPrecision; p == nil || *p != 0.75 {
		t.Errorf("mean precision of those %s, want 0.75", deref(p))
	}
	if t.Failed() {
		t.FailNow()
	}
	// Two tasks are too few for an interval.
	if s.CI95 != nil {
		t.Fatalf("ci95 over 2 tasks = %v, want none", *s.CI95)
	}
}

func TestBootstrapIsReproducibleAndBracketsTheMean(t *testing.T) {
	var tasks []TaskResult
	for i := range 40 {
		score := float64(i%5) / 4
		tasks = append(tasks, TaskResult{Task: string(rune('A' + i)), Episodes: []Episode{
			episode(1, score, 1, 1, 1, 0), episode(2, score/2, 1, 1, 1, 1), episode(3, 0, 0, 1, 0, 0)}})
	}
	a, b := Summarise(tasks), Summarise(tasks)
	if a.CI95 == nil || b.CI95 == nil {
		t.Fatalf("no CI over 40 tasks: %s, %s", deref(a.CI95), deref(b.CI95))
	}
	if *a.CI95 != *b.CI95 {
		t.Fatalf("CI not reproducible: %v vs %v", *a.CI95, *b.CI95)
	}
	if !(a.CI95[0] < a.Score && a.Score < a.CI95[1]) || a.CI95[1]-a.CI95[0] > 0.3 {
		t.Fatalf("CI %v does not bracket %v tightly", a.CI95, a.Score)
	}
}

func TestSummariseEmpty(t *testing.T) {
	s := Summarise(nil)
	if s.Score != 0 {
		t.Errorf("empty summary: score %v, want 0", s.Score)
	}
	if s.Episodes != 0 {
		t.Errorf("empty summary: %d episodes, want 0", s.Episodes)
	}
	if p := s.FullRecallPrecision; p != nil {
		t.Errorf("empty summary: full-recall precision %v, want none", *p)
	}

	if s.CI95 != nil || FormatCI(s.CI95) != "n/a (fewer than 5 tasks)" {
		t.Fatalf("empty summary: ci95 %v, %q", s.CI95, FormatCI(s.CI95))
	}
}

// TestIntervalNeedsEnoughTasks: below MinTasksForInterval tasks there is no interval, and it
// reads n/a with the reason; from it on there is one, however many repeats.
func TestIntervalNeedsEnoughTasks(t *testing.T) {
	var tasks []TaskResult
	for i := range MinTasksForInterval {
		tasks = append(tasks, TaskResult{Task: string(rune('a' + i)), Episodes: []Episode{episode(1, float64(i%2), 1, 1, 1, 0), episode(2, 1, 1, 1, 1, 0)}})
		s := Summarise(tasks)
		switch {
		case len(tasks) < MinTasksForInterval && (s.CI95 != nil || FormatCI(s.CI95) != "n/a (fewer than 5 tasks)"):
			t.Errorf("%d tasks: ci95 %v, %q", len(tasks), s.CI95, FormatCI(s.CI95))
		case len(tasks) == MinTasksForInterval && (s.CI95 == nil || FormatCI(s.CI95) != fmt.Sprintf("%.3f-%.3f", s.CI95[0], s.CI95[1])):
			t.Errorf("%d tasks: ci95 %v, %q", len(tasks), s.CI95, FormatCI(s.CI95))
		}
	}
}

// TestExtentOfAShard: a shard's tasks lack some repeats; the summary counts the repeats by
// number and says the episodes are part of the grid.
func TestExtentOfAShard(t *testing.T) {
	s := Summarise([]TaskResult{
		{Task: "a", Episodes: []Episode{episode(1, 1, 1, 1, 1, 0), episode(3, 1, 1, 1, 1, 0)}},
		{Task: "b", Episodes: []Episode{episode(2, 1, 1, 1, 1, 0)}},
	})
	if s.Repeats != 3 || s.Extent() != "3 of the 6 episodes of 2 tasks x 3 repeats" {
		t.Errorf("repeats %d, extent %q", s.Repeats, s.Extent())
	}
	whole := Summarise([]TaskResult{{Task: "a", Episodes: []Episode{episode(1, 1, 1, 1, 1, 0)}}})
	if whole.Extent() != "1 task x 1 repeat = 1 episode" {
		t.Errorf("extent %q", whole.Extent())
	}
}
