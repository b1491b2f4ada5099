//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunFollowsTheReferenceLoopByDefault: with default flags every request carries the
// reference client's output cap and offers finish first, run.json records the loop and the cap
// (and no context window: the reference loop has none), and a resume with the lenient loop
// is refused.
func TestRunFollowsTheReferenceLoopByDefault(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	args := s.command(out)
	if r := aaGrade(t, s.env, args...); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	bodies := s.fake.Bodies()
	if len(bodies) != 3 {
		t.Fatalf("%d requests, want 3", len(bodies))
	}
	for i, b := range bodies {
		body := gjson.ParseBytes(b)
		if cap := body.Get("max_completion_tokens"); cap.Int() != 64000 {
			t.Errorf("request %d: max_completion_tokens %s, want 64000", i+1, cap.Raw)
		}
		if first := body.Get("tools.0.function.name").String(); first != "finish" {
			t.Errorf("request %d offers %s first", i+1, first)
		}
	}
	header, err := os.ReadFile(filepath.Join(out, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	h := gjson.ParseBytes(header)
	if got := h.Get("loop").String(); got != "reference" {
		t.Errorf("run.json records loop %q, want reference", got)
	}
	if got := h.Get("max_tokens").Int(); got != 64000 {
		t.Errorf("run.json records max_tokens %d, want 64000", got)
	}
	if w := h.Get("context_window"); w.Exists() {
		t.Errorf("run.json records context_window %s, want none (the reference loop has none)", w.Raw)
	}
	r := aaGrade(t, s.env, append(args, "--loop", "lenient")...)
	if r.code != 2 || !strings.Contains(r.stderr, "loop was reference, now lenient") {
		t.Fatalf("a lenient resume of a reference run: exit %d\n%s", r.code, r.stderr)
	}
}

// TestLenientRunIsMarked: a run of the lenient loop records it, sends the shell tool first
// and no cap when --max-tokens 0 asks for the provider's default, and its report says it is
// not comparable with the leaderboard.
func TestLenientRunIsMarked(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, s.env, s.command(out, "--loop", "lenient", "--max-tokens", "0", "--context-window", "100000")...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	for i, b := range s.fake.Bodies() {
		body := gjson.ParseBytes(b)
		if body.Get("max_completion_tokens").Exists() || body.Get("tools.0.function.name").String() != "code_exec" {
			t.Errorf("request %d: cap %s, first tool %s", i+1, body.Get("max_completion_tokens").Raw, body.Get("tools.0.function.name"))
		}
	}
	header, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if h := gjson.ParseBytes(header); h.Get("loop").String() != "lenient" || h.Get("context_window").Int() != 100000 {
		t.Errorf("run.json: %s", header)
	}
	report, err := os.ReadFile(filepath.Join(out, "report.md"))
	if err != nil || !strings.Contains(string(report), "Not comparable with the published leaderboard") {
		t.Errorf("report.md does not mark the lenient run (%v)", err)
	}
}

// TestCutReplyIsTheModelsOutcome: a reply cut at the output cap ends the episode as
// output_limit, scored 0 with the reason recorded, counted in the run's summary, and kept by a
// resume (which runs error episodes again, not this).
func TestCutReplyIsTheModelsOutcome(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 4, Command: "ls", Answer: answer901, CutAt: 2}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	args := s.command(out)
	r := aaGrade(t, s.env, args...)
	r.wantExit(t, 0)
	textcheck.Has(t, "stdout", r.stdout, "1 output_limit")
	if n := s.fake.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if t.Failed() {
		t.FailNow()
	}
	results, err := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	res := gjson.ParseBytes(results)
	if s := res.Get("status").String(); s != "output_limit" {
		t.Errorf("status %s, want output_limit", s)
	}
	if s := res.Get("score").Float(); s != 0 {
		t.Errorf("score %v, want 0", s)
	}
	if !textcheck.Has(t, "the episode's error", res.Get("error").String(), "64000") || t.Failed() {
		t.Fatalf("results.jsonl: %s", results)
	}

	if r := aaGrade(t, s.env, args...); r.code != 0 || s.fake.Requests() != 2 {
		t.Fatalf("resume: exit %d, %d requests (want 0 and still 2)\n%s", r.code, s.fake.Requests(), r.stderr)
	}
}
