//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunSendsModelParams: --temperature, --top-p and -M/--model-arg go in every request the
// model gets (a JSON value as JSON, any other as a string), run.json records them, the run
// and its report say it is not comparable, and a resume with another temperature is refused,
// naming both, while the same flags resume (and a dry run says nothing is left to play).
func TestRunSendsModelParams(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 2, Command: "ls", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	args := s.command(out, "--temperature", "0.3", "--top-p", "0.8", "-M", "seed=7",
		"--model-arg", `chat_template_kwargs={"enable_thinking":false}`, "-M", "user=alice,bob", "--model-header", "X-Title=t")
	r := aaGrade(t, s.env, args...)
	r.wantExit(t, 0)
	textcheck.Has(t, "stderr", r.stderr, `model parameters: temperature=0.3 top_p=0.8`, "not comparable with the leaderboard")
	bodies := s.fake.Bodies()
	if len(bodies) != 2 {
		t.Fatalf("%d requests, want 2", len(bodies))
	}
	for i, b := range bodies {
		for path, want := range map[string]string{"temperature": "0.3", "top_p": "0.8", "seed": "7",
			"chat_template_kwargs": `{"enable_thinking":false}`, "user": `"alice,bob"`, "model": `"fake"`} {
			if got := gjson.GetBytes(b, path).Raw; got != want {
				t.Errorf("request %d: %s = %s, want %s", i+1, path, got, want)
			}
		}
	}
	header, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{"model_params.temperature": "0.3", "model_params.fields.seed": "7",
		"model_params.header_sha256.X-Title": `"e3b98a4da31a127d4bde6e43033f66ba274cab0eb7eb1c70ec41402bf6273dd8"`} {
		if got := gjson.GetBytes(header, path).Raw; got != want {
			t.Errorf("run.json: %s = %s, want %s", path, got, want)
		}
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	textcheck.Has(t, "report.md", string(report), "Model parameters: temperature=0.3", "Not comparable with the published leaderboard")

	other := aaGrade(t, s.env, s.command(out, "--temperature", "0.5")...)
	other.wantExit(t, 2)
	textcheck.Has(t, "stderr", other.stderr, "model_params was temperature=0.3 top_p=0.8", "now temperature=0.5")
	aaGrade(t, s.env, args...).wantExit(t, 0)
	dry := aaGrade(t, s.env, append(args, "--dry-run")...)
	dry.wantExit(t, 0)
	textcheck.Has(t, "a dry run's stdout", dry.stdout, "would run 0 of the 1 episode of 1 task x 1 repeat (1 already finished in "+out+")")
	if n := s.fake.Requests(); n != 2 {
		t.Errorf("%d requests after the resumes, want still 2", n)
	}
}

// TestModelHeaderNeverWritten: a custom header's value, which may be a secret, is sent but never
// written: run.json, the trajectories, the reports and both exports hold its SHA-256 only; a
// resume with another value is refused, naming the header, and one with the same value resumes.
func TestModelHeaderNeverWritten(t *testing.T) {
	const secret = "route-token-5f0c2e9a7b"
	s := newScriptedRun(t, fakemodel.Script{Turns: 2, Command: "ls", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	args := s.command(out, "--model-header", "X-Route-Token="+secret)
	aaGrade(t, s.env, args...).wantExit(t, 0)
	header, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	digest := model.HeaderDigest(secret)
	if got := gjson.GetBytes(header, "model_params.header_sha256.X-Route-Token").String(); got != digest {
		t.Errorf("run.json records the header as %q, want its SHA-256 %s", got, digest)
	}
	exports := t.TempDir()
	for _, format := range []string{"atif", "openai-jsonl"} {
		r := aaGrade(t, s.env, "export", out, "--format", format, "--out", filepath.Join(exports, format))
		r.wantExit(t, 0)
	}
	assertNoSecret(t, out, secret)
	assertNoSecret(t, exports, secret)
	trajectory := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1"))
	textcheck.Has(t, "the trajectory", trajectory, `"X-Route-Token":"sha256:`+digest+`"`)

	other := aaGrade(t, s.env, s.command(out, "--model-header", "X-Route-Token=another-token-1234")...)
	other.wantExit(t, 2)
	textcheck.Has(t, "stderr of a resume with another value", other.stderr,
		"model_params was header X-Route-Token=sha256:"+digest[:16], "now header X-Route-Token=sha256:")
	textcheck.Lacks(t, "stderr of a resume with another value", other.stderr, secret, "another-token-1234")
	aaGrade(t, s.env, args...).wantExit(t, 0)
	if n := s.fake.Requests(); n != 2 {
		t.Errorf("%d requests after the resumes, want still 2", n)
	}
}

// TestModelParamsRefused: a preset refuses the model's parameters unless --not-comparable
// says so; an agent, a field of the loop's own, a header with the key, and values that mean
// nothing are refused, each naming the flag; nothing is called.
func TestModelParamsRefused(t *testing.T) {
	p := fakeProvider(t, fakemodel.Script{Turns: 1, Command: "ls", Answer: answer901}, testKey)
	run := func(extra ...string) []string {
		return append([]string{"run", "--dataset", "demo", "--tasks", "901", "--repeats", "1", "--dry-run",
			"--out", filepath.Join(t.TempDir(), "run")}, extra...)
	}
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"a preset", run("--model", "claude-opus-4-7-max", "--temperature", "0.2"),
			[]string{"--model claude-opus-4-7-max is a preset", "--temperature", "--not-comparable"}},
		{"an agent", run("--model", "openai/fake", "--agent", "codex", "-M", "seed=1"), []string{"--model-arg", "--agent"}},
		{"the loop's field", run("--model", "openai/fake", "-M", "messages=[]"), []string{"--model-arg", "field messages", "aa-grade's own"}},
		{"the key's header", run("--model", "openai/fake", "--model-header", "Authorization=Bearer x"),
			[]string{"--model-header", "header Authorization"}},
		{"no value", run("--model", "openai/fake", "-M", "seed"), []string{"--model-arg", "KEY=VALUE"}},
		{"a key twice", run("--model", "openai/fake", "-M", "seed=1", "-M", "seed=2"), []string{"--model-arg seed: given twice"}},
		{"top-p 0", run("--model", "openai/fake", "--top-p", "0"), []string{"--top-p 0: must be above 0"}},
		{"a negative temperature", run("--model", "openai/fake", "--temperature", "-1"), []string{"--temperature -1"}},
	} {
		r := aaGrade(t, p.env, c.args...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", c.name, r.code, r.stderr)
			continue
		}
		textcheck.Has(t, c.name, r.stderr, c.want...)
	}
	r := aaGrade(t, p.env, run("--model", "claude-opus-4-7-max", "--temperature", "0.2", "--not-comparable")...)
	r.wantExit(t, 0)
	if n := p.Requests(); n != 0 {
		t.Errorf("%d requests, want none", n)
	}
}
