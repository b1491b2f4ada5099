package grader

import (
	"fmt"
	"math"
	"testing"
)

// thirds makes one task per value, each with one episode scoring n/3.
func thirds(prefix string, ns []int) []TaskResult {
	var out []TaskResult
	for i, n := range ns {
		out = append(out, TaskResult{Task: fmt.Sprintf("%s-%d", prefix, i+1),
			Episodes: []Episode{{Repeat: 1, Verdict: Verdict{EpisodeScore: EpisodeScore{Score: float64(n) / 3}}}}})
	}
	return out
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }

// TestCompareAgainstSciPy: the fixed examples' figures (testdata/compare_reference.py, which
// prints them) come from SciPy 1.10.1 (Debian
// bookworm's python3-scipy) and numpy, run outside the project: scipy.stats.permutation_test
// of the paired samples with n_resamples=inf (every sign pattern), scipy.stats.bootstrap of
// the differences' mean (percentile method, 200,000 resamples), and, for 25 tasks (2^25
// patterns, too many for SciPy's enumeration), the exact sign-flip distribution of the sum by
// dynamic programming over its integer values. Exact p-values must be equal; the sampled one
// and the bootstrap's bounds within their Monte Carlo error.
func TestCompareAgainstSciPy(t *testing.T) {
	a := []float64{0, 1, 0.5, 1.0 / 3, 1, 0, 2.0 / 3, 0, 1, 0.5, 0, 0.25}
	b := []float64{0.5, 1, 1, 2.0 / 3, 1, 0, 1, 1.0 / 3, 2.0 / 3, 1, 0.5, 0.25}
	c := Compare(means("S", a), means("S", b))
	wantComparison(t, "12 tasks", c, 12, 0.2222222222, 0.0390625, 1e-12)
	if !near(c.CI95[0], 0.069444, 0.01) || !near(c.CI95[1], 0.361111, 0.01) {
		t.Errorf("12 tasks: bootstrap %v, SciPy [0.069444 0.361111]", *c.CI95)
	}
	c = Compare(thirds("S", []int{3, 2, 2, 3, 2, 3, 3, 0, 0, 1, 1, 3, 3, 0, 1, 3, 0, 3, 0, 1}),
		thirds("S", []int{3, 2, 2, 3, 3, 3, 3, 0, 0, 2, 2, 3, 3, 2, 3, 3, 1, 3, 0, 3}))
	wantComparison(t, "20 tasks, exact", c, 20, 0.1666666667, 0.015625, 1e-12)
	c = Compare(thirds("S", []int{0, 0, 3, 1, 2, 2, 2, 0, 1, 0, 1, 3, 2, 0, 2, 0, 3, 3, 3, 2, 3, 1, 0, 2, 1}),
		thirds("S", []int{1, 2, 3, 3, 1, 2, 3, 0, 2, 0, 2, 3, 3, 2, 3, 2, 3, 2, 2, 2, 3, 3, 0, 3, 1}))
	wantComparison(t, "25 tasks, sampled (exact p 0.0140991211)", c, 25, 0.1866666667, 0.0140991211, 0.002)
}

// wantComparison checks a comparison's tasks, difference (to 1e-9) and p-value (to pTol),
// each its own failure, and stops the test when one is wrong.
func wantComparison(t *testing.T, what string, c Comparison, tasks int, difference, p, pTol float64) {
	t.Helper()
	if c.Tasks != tasks {
		t.Errorf("%s: %d tasks compared, want %d", what, c.Tasks, tasks)
	}
	if !near(c.Difference, difference, 1e-9) {
		t.Errorf("%s: difference %v, want %v", what, c.Difference, difference)
	}
	if c.PValue == nil || !near(*c.PValue, p, pTol) {
		t.Errorf("%s: p-value %s, want %v within %v", what, deref(c.PValue), p, pTol)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// means makes one task per value, with one episode of that score.
func means(prefix string, scores []float64) []TaskResult {
	var out []TaskResult
	for i, s := range scores {
		out = append(out, TaskResult{Task: fmt.Sprintf("%s-%d", prefix, i+1),
			Episodes: []Episode{{Repeat: 1, Verdict: Verdict{EpisodeScore: EpisodeScore{Score: s}}}}})
	}
	return out
}

// TestCompareSharesOnlyWhatBothHave: tasks and repeats one run lacks are left out and named;
// below MinTasksForInterval tasks there is no interval and no p-value.
func TestCompareSharesOnlyWhatBothHave(t *testing.T) {
	ep := func(repeat int, score float64) Episode {
		return Episode{Repeat: repeat, Verdict: Verdict{EpisodeScore: EpisodeScore{Score: score}}}
	}
	a := []TaskResult{{Task: "S-1", Episodes: []Episode{ep(1, 0), ep(2, 1), ep(3, 1)}}, {Task: "S-2", Episodes: []Episode{ep(1, 1)}}, {Task: "S-3", Episodes: []Episode{ep(1, 0)}}}
	b := []TaskResult{{Task: "S-1", Episodes: []Episode{ep(1, 1), ep(2, 1)}}, {Task: "S-2", Episodes: []Episode{ep(1, 1)}}, {Task: "S-4", Episodes: []Episode{ep(1, 1)}}}
	c := Compare(a, b)
	if c.Tasks != 2 || c.Repeats != 2 {
		t.Errorf("%d tasks and %d repeats compared, want 2 and 2", c.Tasks, c.Repeats)
	}
	if !near(c.Difference, 0.25, 1e-12) {
		t.Errorf("difference %v, want 0.25", c.Difference)
	}
	if c.CI95 != nil {
		t.Errorf("an interval %v below MinTasksForInterval tasks", *c.CI95)
	}
	if c.PValue != nil {
		t.Errorf("a p-value %v below MinTasksForInterval tasks", *c.PValue)
	}
	if t.Failed() {
		t.FailNow()
	}

	if fmt.Sprint(c.OnlyA, c.OnlyB, c.UnevenRepeats) != "[S-3] [S-4] [S-1]" {
		t.Fatalf("only a %v, only b %v, uneven %v", c.OnlyA, c.OnlyB, c.UnevenRepeats)
	}
}
