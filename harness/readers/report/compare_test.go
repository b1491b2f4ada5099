package report

import (
	"fmt"
	"html"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// sixTaskRuns writes two runs over six tasks, one repeat each: b scores 1 where a scores 0
// on every task, so the difference is +1 and, over six tasks, the exact sign-flip p-value
// is 2/64.
func sixTaskRuns(t *testing.T) (a, b *Run) {
	t.Helper()
	base := t.TempDir()
	var tasks, ra, rb []string
	for i := range 6 {
		task := fmt.Sprintf("Scenario-%d", i+1)
		tasks = append(tasks, task)
		ra = append(ra, result(task, 1, "ok", 0, 0))
		rb = append(rb, result(task, 1, "ok", 1, 0))
	}
	return writeRun(t, filepath.Join(base, "a"), "m/a", tasks, 1, ra...), writeRun(t, filepath.Join(base, "b"), "m/b", tasks, 1, rb...)
}

func TestCompareRunsGivesTheDifferenceAndItsTest(t *testing.T) {
	a, b := sixTaskRuns(t)
	got := CompareRuns([]*Run{a, b})
	if len(got) != 2 {
		t.Fatalf("CompareRuns = %v, want two answers", got)
	}
	if got[0] != nil {
		t.Errorf("the first run is compared with itself: %+v", got[0])
	}
	if got[1] == nil {
		t.Errorf("the second run is not compared with the first")
	}
	if t.Failed() {
		t.FailNow()
	}
	v := got[1]
	if v.Against != a.Dir {
		t.Errorf("compared against %s, want %s", v.Against, a.Dir)
	}
	if v.Tasks != 6 || v.Repeats != 1 {
		t.Errorf("over %d tasks x %d repeats, want 6 x 1", v.Tasks, v.Repeats)
	}
	if !near(v.Difference, 1) {
		t.Errorf("difference %g, want 1", v.Difference)
	}
	if v.CI95 == nil {
		t.Errorf("no interval over 6 tasks: %s", v.NoInterval)
	}
	if v.PValue == nil {
		t.Error("no p-value over 6 tasks")
	} else if !near(*v.PValue, 2.0/64) {
		t.Errorf("p-value %g, want 2/64 (the two all-same-sign flips of 6)", *v.PValue)
	}
	if v.NoInterval != "" || v.Warning != "" {
		t.Errorf("why no interval %q, warning %q: want none", v.NoInterval, v.Warning)
	}
	if s := v.Text(); !strings.Contains(s, "+1.000") || !strings.Contains(s, "p 0.031") {
		t.Errorf("Text() = %q", s)
	}
}

// TestCompareRunsLeavesOutWhatIsNotShared: tasks one run lacks and episodes in error or not
// run are left out of the pairing, and the warning says how many.
func TestCompareRunsLeavesOutWhatIsNotShared(t *testing.T) {
	base := t.TempDir()
	a := writeRun(t, filepath.Join(base, "a"), "m/a", []string{"S-1", "S-2", "S-3"}, 2,
		result("S-1", 1, "ok", 1, 0), result("S-1", 2, "ok", 1, 0),
		result("S-2", 1, "ok", 0, 0), result("S-2", 2, "error", 0, 0),
		result("S-3", 1, "ok", 0, 0), result("S-3", 2, "ok", 0, 0))
	b := writeRun(t, filepath.Join(base, "b"), "m/b", []string{"S-1", "S-2", "S-4"}, 2,
		result("S-1", 1, "ok", 0.5, 0), result("S-1", 2, "ok", 0.5, 0),
		result("S-2", 1, "ok", 1, 0), result("S-2", 2, "ok", 1, 0),
		result("S-4", 1, "ok", 1, 0))
	v := CompareRuns([]*Run{a, b})[1]
	// S-1: 0.5-1; S-2 over repeat 1 only: 1-0. Mean 0.25.
	if v.Tasks != 2 {
		t.Errorf("over %d tasks, want 2", v.Tasks)
	}
	if !near(v.Difference, 0.25) {
		t.Errorf("difference %g, want 0.25", v.Difference)
	}
	for _, c := range []struct {
		what      string
		got, want []string
	}{{"only in a", v.OnlyA, []string{"S-3"}}, {"only in b", v.OnlyB, []string{"S-4"}}, {"uneven repeats", v.UnevenRepeats, []string{"S-2"}}} {
		if !slices.Equal(c.got, c.want) {
			t.Errorf("%s %v, want %v", c.what, c.got, c.want)
		}
	}
	if v.CI95 != nil {
		t.Errorf("2 shared tasks: interval %v, want none", *v.CI95)
	}
	if v.PValue != nil {
		t.Errorf("2 shared tasks: p-value %v, want none", *v.PValue)
	}
	textcheck.Has(t, "why 2 shared tasks have no interval", v.NoInterval, fmt.Sprintf("fewer than %d", grader.MinTasksForInterval))
	for _, want := range []string{"1 task only in " + a.Dir, "1 task only in " + b.Dir, "left out", "1 shared task", "S-2"} {
		if !strings.Contains(v.Warning, want) {
			t.Errorf("warning %q lacks %q", v.Warning, want)
		}
	}
	if s := v.Text(); !strings.Contains(s, "+0.250") || !strings.Contains(s, "n/a") {
		t.Errorf("Text() = %q", s)
	}
}

func TestCompareRunsWithNothingShared(t *testing.T) {
	base := t.TempDir()
	a := writeRun(t, filepath.Join(base, "a"), "m/a", []string{"S-1"}, 1, result("S-1", 1, "ok", 1, 0))
	b := writeRun(t, filepath.Join(base, "b"), "m/b", []string{"S-2"}, 1, result("S-2", 1, "ok", 1, 0))
	v := CompareRuns([]*Run{a, b})[1]
	if v.Tasks != 0 {
		t.Errorf("%d tasks compared, want none", v.Tasks)
	}
	textcheck.Has(t, "why there is no interval", v.NoInterval, "no task")
	if !textcheck.Has(t, "the comparison's text", v.Text(), "n/a") || t.Failed() {
		t.Fatalf("comparison %+v", v)
	}

	if got := CompareRuns([]*Run{a}); len(got) != 1 || got[0] != nil {
		t.Errorf("one run: %v", got)
	}
}

// TestHTMLComparesRuns: report.html of several runs has a table of each run against the
// first, with the test named, and warns of what the runs do not share; one run has none.
func TestHTMLComparesRuns(t *testing.T) {
	a, b := sixTaskRuns(t)
	few := writeRun(t, filepath.Join(t.TempDir(), "few"), "m/few", []string{"Scenario-1", "Scenario-9"}, 1,
		result("Scenario-1", 1, "ok", 1, 0), result("Scenario-9", 1, "ok", 1, 0))
	page := html.UnescapeString(renderHTML(t, a, b, few))
	for _, want := range []string{"Against R1", TestNote, "+1.000", "0.031", "fewer than 5 shared tasks",
		"5 tasks only in " + a.Dir, "1 task only in " + few.Dir} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if !strings.Contains(page, `class="ci"`) {
		t.Error("no interval drawn for runs of 6 tasks")
	}
	if page := renderHTML(t, a); strings.Contains(page, "Against R1") {
		t.Error("report.html of one run compares it")
	}
}
