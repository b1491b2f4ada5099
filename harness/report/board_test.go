package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
)

func TestOtherTasks(t *testing.T) {
	for _, c := range []struct {
		dataset string
		tasks   []string
		want    string // in the reason; "" when the run is ranked beside the published rows
	}{
		{"hf:ArtificialAnalysis/ITBench-AA", []string{"Scenario-2", "Scenario-105"}, ""},
		{"hf:artificialanalysis/itbench-aa@8c6f2b4e", []string{"Scenario-38"}, ""},
		{"demo", []string{"Scenario-901"}, "its dataset, demo, is not ITBench-AA's"},
		{"./ITBench-AA", []string{"Scenario-2"}, "its dataset, ./ITBench-AA, is not ITBench-AA's"},
		{"hf:someone/generated", []string{"Scenario-2"}, "is not ITBench-AA's"},
		{"hf:ArtificialAnalysis/ITBench-AA", []string{"Scenario-2", "Scenario-10", "Scenario-901"},
			"2 of its tasks are not among ITBench-AA's public ones (Scenario-10, Scenario-901)"},
		{"hf:ArtificialAnalysis/ITBench-AA", nil, "no task"},
	} {
		got := otherTasks(c.dataset, c.tasks)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("otherTasks(%q, %v) = %q, want %q", c.dataset, c.tasks, got, c.want)
		}
	}
}

// TestReportsRankOnlyITBenchRuns: a run of other tasks (the demo) gets no published rows in
// report.md, and in report.html its own table beside a run of ITBench-AA's tasks, each with a
// sentence saying why.
func TestReportsRankOnlyITBenchRuns(t *testing.T) {
	demo := writeRun(t, filepath.Join(t.TempDir(), "demo"), "builtin/baseline", []string{"Scenario-902"}, 1,
		result("Scenario-902", 1, "ok", 1, 0))
	if o := demo.Overview(); !strings.Contains(o.OtherTasks, "demo") {
		t.Fatalf("the demo run's overview: %+v", o)
	}
	md := markdown(t, demo)
	if strings.Contains(md, "| published |") || strings.Contains(md, SubsetNote) || !strings.Contains(md, "Not ranked against the published leaderboard") ||
		!strings.Contains(md, "its dataset, demo, is not ITBench-AA's") {
		t.Errorf("report.md of a demo run:\n%s", md)
	}
	if md := markdown(t, load(t, opusDir)); !strings.Contains(md, "| published |") || strings.Contains(md, "Not ranked") {
		t.Errorf("report.md of a run of ITBench-AA's tasks has no published rows:\n%s", md)
	}
	page := renderHTML(t, load(t, opusDir), demo)
	if n := strings.Count(page, "published, 59 tasks"); n != 2*len(leaderboard.Published) {
		t.Errorf("published rows marked %d times, want %d", n, 2*len(leaderboard.Published))
	}
	for _, want := range []string{"Runs on other tasks", "R2: not ranked against the published leaderboard", SubsetNote} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	alone := renderHTML(t, demo)
	if strings.Contains(alone, "published, 59 tasks") || strings.Contains(alone, SubsetNote) || !strings.Contains(alone, "Runs on other tasks") {
		t.Error("report.html of a demo run shows the published leaderboard")
	}
}
