package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestGradeBoundsEntities: a submission past grader.MaxEntities is graded on its first
// entities, the rest counted in the text and JSON outputs, and the judge is asked of the
// first ones only.
func TestGradeBoundsEntities(t *testing.T) {
	const extra = 51
	names := []string{"otel-demo/ConfigMap/flagd-config", "otel-demo/ConfigMap/flagd-config"}
	for i := range grader.MaxEntities - 1 + extra {
		names = append(names, fmt.Sprintf("otel-demo/Pod/noise-%d", i))
	}
	doc, _ := json.Marshal(names)
	subs := t.TempDir()
	testfs.Write(t, filepath.Join(subs, "Scenario-901", "1.json"), string(doc))
	args := []string{"grade", "--dataset", "testdata/grade/dataset", "--repeats", "1", subs}
	note := fmt.Sprintf("Scenario-901 repeat 1: %s", grader.DroppedNote(extra))

	r := aaGrade(t, nil, args...)
	if r.code != 0 || !strings.Contains(r.stdout, note+"\n") {
		t.Fatalf("exit %d, want the note %q\n%s%s", r.code, note, r.stdout, r.stderr)
	}
	j := aaGrade(t, nil, append(args, "--json")...)
	ep := gjson.Get(j.stdout, `per_task.#(task=="Scenario-901").episodes.0`)
	j.wantExit(t, 0)
	for _, c := range []struct {
		path string
		want int64
	}{{"entities_dropped", int64(extra)}, {"predictions.#", int64(grader.MaxEntities)}, {"fp", int64(grader.MaxEntities - 1 + extra)}} {
		if got := ep.Get(c.path).Int(); got != c.want {
			t.Errorf("the episode's %s %d, want %d", c.path, got, c.want)
		}
	}
	if t.Failed() {
		t.Fatalf("the episode: %.300s", ep.Raw)
	}

	asked := 0
	f := &fakeJudge{answer: byTable(map[string]any{}), seen: func(req gjson.Result) {
		for line := range strings.Lines(req.Get("messages.1.content").String()) {
			if strings.HasPrefix(line, `"`) {
				asked++
			}
		}
	}}
	env, _ := judgeEnv(t, f)
	if r := aaGrade(t, env, append(args, "--judge", "openai/judge-model", "--json")...); r.code != 0 || gjson.Get(r.stdout, `per_task.#(task=="Scenario-901").episodes.0.entities_dropped`).Int() != extra {
		t.Fatalf("with a judge: exit %d\n%s", r.code, r.stderr)
	}
	if f.requests.Load() != 1 || asked != grader.MaxEntities {
		t.Fatalf("the judge was asked %d times of %d entities, want once of %d", f.requests.Load(), asked, grader.MaxEntities)
	}
}
