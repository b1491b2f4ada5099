package report

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestReportOfAHugeSubmission: an episode whose submission names 20,000 entities gets a
// report.md of bounded size that says how many entities were not graded.
func TestReportOfAHugeSubmission(t *testing.T) {
	gt, err := os.ReadFile(filepath.Join("..", "..", "..", "testdata", "grade", "dataset", "sre", "Scenario-901", "ground_truth.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"otel-demo/ConfigMap/flagd-config"}
	for i := range 20000 {
		names = append(names, fmt.Sprintf("otel-demo/Pod/noise-%d", i))
	}
	sub, _ := json.Marshal(names)
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": "openai/m", "dataset": "test", "tasks": ["Scenario-901"], "repeats": 1}`)
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), `{"task":"Scenario-901","repeat":1,"status":"ok","root_causes":1}`+"\n")
	testfs.Write(t, filepath.Join(dir, "episodes", "Scenario-901", "1", "agent_output.json"), string(sub))
	r, err := WriteFolder(dir, []analysis.Task{{Task: grader.Task{ID: "Scenario-901", GroundTruth: gt}}})
	if err != nil || r.AnalysisErr != nil {
		t.Fatalf("%v, analysis: %v", err, r.AnalysisErr)
	}
	ep := r.Analysis.Episodes[0]
	if want := len(names) - grader.MaxEntities; ep.EntitiesDropped != want {
		t.Errorf("analysis: %d dropped, want %d", ep.EntitiesDropped, want)
	}
	want := 1.0 / float64(len(names))
	if math.Abs(ep.Score-want) > 1e-12 {
		t.Errorf("analysis: score %v, want %v", ep.Score, want)
	}
	if math.Abs(ep.PartialCredit-want) > 1e-12 {
		t.Errorf("analysis: partial credit %v, want %v", ep.PartialCredit, want)
	}
	md, _ := os.ReadFile(filepath.Join(dir, MarkdownFile))
	if len(md) > 32<<10 {
		t.Errorf("report.md of %d bytes for a submission of %d", len(md), len(sub))
	}
	if note := grader.DroppedNote(len(names) - grader.MaxEntities); !strings.Contains(string(md), note) {
		t.Errorf("report.md does not say %q", note)
	}
}
