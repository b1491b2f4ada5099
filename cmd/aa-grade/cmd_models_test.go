package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
)

func TestModels(t *testing.T) {
	r := aaGrade(t, nil, "models")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/models.txt", r.stdout)

	j := aaGrade(t, []string{"AA_GRADE_JSON=1"}, "models")
	if j.code != 0 {
		t.Fatalf("--json: exit %d\n%s", j.code, j.stderr)
	}
	golden.Check(t, "testdata/models.json", j.stdout)
	var out struct {
		Presets []struct {
			Name   string           `json:"name"`
			Prices *json.RawMessage `json:"prices"`
		} `json:"presets"`
		Published struct {
			Tasks int `json:"tasks"`
		} `json:"published"`
	}
	if err := json.Unmarshal([]byte(j.stdout), &out); err != nil {
		t.Fatalf("--json: %v\n%s", err, j.stdout)
	}
	if len(out.Presets) == 0 {
		t.Errorf("--json lists no presets")
	}
	if out.Published.Tasks != 59 {
		t.Errorf("--json: %d published tasks, want 59", out.Published.Tasks)
	}
	if t.Failed() {
		t.FailNow()
	}
	// Every preset is a row of the text table, "unknown" where its JSON prices are null.
	for _, p := range out.Presets {
		line := ""
		for _, l := range strings.Split(r.stdout, "\n") {
			if strings.HasPrefix(l, p.Name+" ") {
				line = l
			}
		}
		if line == "" || strings.Contains(line, " unknown ") != (p.Prices == nil) {
			t.Errorf("%s: text row %q does not match JSON prices %v", p.Name, line, p.Prices)
		}
	}
	if r := aaGrade(t, nil, "models", "extra"); r.code != 2 {
		t.Errorf("an argument: exit %d, want 2", r.code)
	}
}
