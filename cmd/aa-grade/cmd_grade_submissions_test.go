package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestGradeRefusesAFolderWithoutSubmissions: an empty folder, or one of flat files in no
// layout grade reads, is a usage error naming the layouts and what was ignored, for grade
// and analyze alike, never a score of 0.
func TestGradeRefusesAFolderWithoutSubmissions(t *testing.T) {
	empty, flat := t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(flat, "Scenario-902.json"), `["otel-demo/Deployment/x"]`)
	testfs.Write(t, filepath.Join(flat, "Scenario-903_1.json"), `["otel-demo/Deployment/x"]`)
	for _, c := range []struct{ dir, says string }{
		{empty, "none of its files is one"},
		{flat, "2 files ignored (Scenario-902.json, Scenario-903_1.json)"},
	} {
		for _, command := range []string{"grade", "analyze"} {
			r := aaGrade(t, nil, command, "--dataset", "demo", c.dir)
			r.checkExit(t, 2)
			textcheck.Has(t, command+"'s stderr", r.stderr, "no submission in "+c.dir+": "+c.says,
				"expected <task>/<repeat>.json or <task>/<repeat>/agent_output.json")
		}
	}
}

// TestGradeNamesWhatItIgnoresAndWhyAnAnswerIsInvalid: beside a graded submission, a flat file
// is a warning; an answer that names no entity is invalid with the reason; a JSON syntax error
// says where; an entities list of plain names is graded.
func TestGradeNamesWhatItIgnoresAndWhyAnAnswerIsInvalid(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "Scenario-901.json"), `[]`)
	testfs.Write(t, filepath.Join(dir, "Scenario-901", "1.json"), `{"entities": ["otel-demo/ConfigMap/flagd-config"]}`)
	testfs.Write(t, filepath.Join(dir, "Scenario-902", "1.json"), `{"contributing_factors": [{"nam": "otel-demo/Deployment/x"}]}`)
	testfs.Write(t, filepath.Join(dir, "Scenario-903", "1.json"), "{\n  \"contributing_factors\": [\n    {\"name\": \"a/K/x\",}\n  ]\n}\n")
	r := aaGrade(t, nil, "grade", "--json", "--dataset", "demo", "--repeats", "1", dir)
	var out struct {
		PerTask []struct {
			Task     string `json:"task"`
			Episodes []struct {
				Status      string `json:"status"`
				Reason      string `json:"reason"`
				Predictions []any  `json:"predictions"`
			} `json:"episodes"`
		} `json:"per_task"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil || len(out.PerTask) != 3 {
		t.Fatalf("exit %d %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if !strings.Contains(r.stderr, "ignored Scenario-901.json: a file beside the task folders") {
		t.Errorf("the flat file is not named: %s", r.stderr)
	}
	got := map[string]string{}
	for _, task := range out.PerTask {
		e := task.Episodes[0]
		got[task.Task] = e.Status + " " + e.Reason
		if task.Task == "Scenario-901" && len(e.Predictions) != 1 {
			t.Errorf("the entities list of names was not graded: %+v", e)
		}
	}
	if !strings.HasPrefix(got["Scenario-901"], "ok") {
		t.Errorf("Scenario-901: %q, want ok", got["Scenario-901"])
	}
	textcheck.Has(t, "Scenario-902's status", got["Scenario-902"], `invalid`, `item 1 has no "name" (keys: "nam")`)
	textcheck.Has(t, "Scenario-903's status", got["Scenario-903"], "invalid JSON at line 3, column 22")
	if t.Failed() {
		t.FailNow()
	}
}
