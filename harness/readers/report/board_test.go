package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
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
	textcheck.Lacks(t, "report.md of a demo run", md, "| published |", SubsetNote)
	textcheck.Has(t, "report.md of a demo run", md, "Not ranked against the published leaderboard", "its dataset, demo, is not ITBench-AA's")
	if md := markdown(t, load(t, opusDir)); !strings.Contains(md, "| published |") || strings.Contains(md, "Not ranked") {
		t.Errorf("report.md of a run of ITBench-AA's tasks has no published rows:\n%s", md)
	}
	page := renderFullHTML(t, load(t, opusDir), demo)
	if n := strings.Count(page, "published, 59 tasks"); n != 2*len(leaderboard.Published) {
		t.Errorf("published rows marked %d times, want %d", n, 2*len(leaderboard.Published))
	}
	for _, want := range []string{"Runs on other tasks", "R2: not ranked against the published leaderboard", SubsetNote} {
		if !strings.Contains(page, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	alone := renderHTML(t, demo)
	textcheck.Lacks(t, "report.html of a demo run", alone, "published, 59 tasks", SubsetNote)
	textcheck.Has(t, "report.html of a demo run", alone, "Runs on other tasks")
}

// TestReportsOfAShard: report.md and report.html say a shard's episodes are part of its tasks
// x repeats, and point to merge.
func TestReportsOfAShard(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": "m/x", "dataset": "demo", "tasks": ["S-1", "S-2"], "repeats": 3, "shard": "1/2"}`)
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), strings.Join([]string{
		result("S-1", 1, "ok", 1, 0), result("S-1", 3, "ok", 1, 0), result("S-2", 2, "ok", 0, 0)}, "\n")+"\n")
	r := load(t, dir)
	for name, text := range map[string]string{"report.md": markdown(t, r), "report.html": renderHTML(t, r)} {
		for _, want := range []string{"3 of the 6 episodes of 2 tasks x 3 repeats", "aa-grade merge joins the folders of a sharded run", "shard 1/2"} {
			if !strings.Contains(text, want) {
				t.Errorf("%s lacks %q", name, want)
			}
		}
	}
}

// TestScatterOfFreeRuns: when every task cost $0 the score-against-cost chart is not drawn
// (every point would sit at $0 on an axis to $1.00); the page says why.
func TestScatterOfFreeRuns(t *testing.T) {
	free := writeRun(t, filepath.Join(t.TempDir(), "free"), "builtin/baseline", []string{"S-1", "S-2"}, 1,
		result("S-1", 1, "ok", 1, 0), result("S-2", 1, "ok", 0, 0))
	page := renderHTML(t, free)
	if strings.Contains(page, "<circle") || !strings.Contains(page, "Every task cost $0") {
		t.Error("a $0 run's scores are plotted against cost")
	}
}
