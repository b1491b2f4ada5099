//go:build linux

package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestGradeARunFolder grades a run folder again: the same scores as the run, the statuses of
// episodes without a submission kept, the dataset taken from run.json.
func TestGradeARunFolder(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 4, Command: "ls", Answer: answer901}, "901,902", "2")
	out := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, s.env, s.command(out, "--max-turns", "3")...); r.code != 0 || !strings.Contains(r.stdout, "4 max_turns") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r := aaGrade(t, s.env, "grade", "--json", out)
	r.wantExit(t, 0)
	if n := strings.Count(r.stdout, `"status": "max_turns"`); n != 4 {
		t.Errorf("grade of a run folder: %d episodes max_turns, want 4", n)
	}
	if !textcheck.Lacks(t, "the grade of a run folder", r.stdout, `"missing"`) || t.Failed() {
		t.Fatalf("stdout:\n%s", r.stdout)
	}
	ok := filepath.Join(t.TempDir(), "ok")
	if r := aaGrade(t, s.env, s.command(ok)...); r.code != 0 || !strings.Contains(r.stdout, "Score 0.250") {
		t.Fatalf("run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = aaGrade(t, s.env, "grade", ok)
	r.wantExit(t, 0)
	if !textcheck.Has(t, "the grade of the run", r.stdout, "Score 0.250", "4 ok") {
		t.FailNow()
	}
}

// TestGradeARunOnTheHub runs on a Hub dataset (the default spec, served by the fake Hub) and
// grades the run folder again: grade fetches the index alone and finds the run's tasks in it.
func TestGradeARunOnTheHub(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.ServeSample(sampleRepo, fakehub.SampleDataset(2, 1024))
	provider := fakeProvider(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: []string{"otel-demo/ConfigMap/flagd-config"}}, "sk-test").env
	env := append(hubEnv(h, t.TempDir()), provider...)
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, env, "run", "--model", "openai/fake", "--tasks", "1,2", "--repeats", "1", "--out", out)
	r.wantExit(t, 0)
	textcheck.Has(t, "the run's stdout", r.stdout, "Score 1.000")
	if !textcheck.Has(t, "the run's stderr", r.stderr, "of hf:"+sampleRepo+"@main") || t.Failed() {
		t.FailNow()
	}

	r = aaGrade(t, env, "grade", out)
	if r.code != 0 || !strings.Contains(r.stdout, "Score 1.000 over 2 tasks x 1 repeat = 2 episodes; 95% CI n/a (fewer than 5 tasks)") {
		t.Fatalf("grade of the run: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The dataset moves on: main now names another root cause. The run is still graded against
	// the commit it ran on, unless --dataset asks for the ground truths as they are now.
	files := fakehub.SampleDataset(2, 1024)
	for path, f := range files {
		if strings.HasSuffix(path, "ground_truth.yaml") || path == "sre/data.jsonl" {
			files[path] = fakehub.File{Content: bytes.ReplaceAll(f.Content, []byte("flagd-config"), []byte("flagd-flags"))}
		}
	}
	h.ServeSample(sampleRepo, files)
	r = aaGrade(t, env, "grade", out)
	if r.code != 0 || !strings.Contains(r.stdout, "Score 1.000") {
		t.Fatalf("grade of the run after the dataset changed: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = aaGrade(t, env, "grade", "--dataset", "hf:"+sampleRepo+"@main", out)
	if r.code != 0 || !strings.Contains(r.stdout, "Score 0.000") {
		t.Fatalf("grade of the run against main as it is now: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
