//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
)

// variable are the fields of analyze --json that vary from one run, or one machine, to the
// next: timings, and the tokens the fake model counts from the prompt's bytes (the prompt
// lists the tools the machine's sandbox has).
var variable = regexp.MustCompile(`"(model_s|tool_s|first_hit_tokens)": [0-9.e+-]+`)

// TestAnalyzeScriptedRun: a scripted model lists alerts for two turns, then writes the answer
// answer901 (the root cause and frontend, two propagation steps from it) and finishes; the
// analysis of its run is the golden file, with the first hit at turn 3.
func TestAnalyzeScriptedRun(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 4, Command: "ls alerts | head -3", Answer: answer901}, "901", "2")
	run := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, s.env, s.command(run)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := aaGrade(t, nil, "analyze", "--json", "--html", filepath.Join(run, "analysis.html"), run)
	if r.code != 0 {
		t.Fatalf("analyze: exit %d\n%s", r.code, r.stderr)
	}
	got := variable.ReplaceAllString(strings.ReplaceAll(r.stdout, run, "RUN"), `"$1": 0`)
	golden.Check(t, "testdata/analyze-scripted.json", got)

	var out []struct {
		Episodes []struct {
			FirstHitTurn   *int   `json:"first_hit_turn"`
			FirstHitTokens *int64 `json:"first_hit_tokens"`
		} `json:"episodes"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("analyze --json: %v\n%s", err, r.stdout)
	}
	if len(out) != 1 || len(out[0].Episodes) != 2 {
		t.Fatalf("%d runs analysed, want one of 2 episodes:\n%s", len(out), r.stdout)
	}
	if hit := out[0].Episodes[0].FirstHitTurn; hit == nil || *hit != 3 {
		t.Errorf("first hit turn %v, want 3", hit)
	}
	// The tokens until the first hit: some, and no more than the episode's in all.
	folder, err := runfolder.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	res := folder.Results[runfolder.Episode{Task: "Scenario-901", Repeat: 1}]
	if tokens := out[0].Episodes[0].FirstHitTokens; tokens == nil {
		t.Errorf("first hit tokens unknown, want some")
	} else if spent := res.Tokens.Input + res.Tokens.Output; *tokens <= 0 || *tokens > spent {
		t.Errorf("first hit tokens %d, want 1 to the episode's %d", *tokens, spent)
	}
	page, err := os.ReadFile(filepath.Join(run, "analysis.html"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"First turn that named a root cause", "<svg", "symptom"} {
		if !strings.Contains(string(page), want) {
			t.Errorf("analysis.html lacks %q", want)
		}
	}
	for _, banned := range []string{"http://", "https://", "<script", "src="} {
		if strings.Contains(string(page), banned) {
			t.Errorf("analysis.html loads or runs something: %q", banned)
		}
	}
	md, err := os.ReadFile(filepath.Join(run, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "Partial credit **0.625** and NTAM 0.368 (SREGym's parameters) beside the gated score 0.500") {
		t.Errorf("report.md has no analysis summary:\n%s", md)
	}
	html, err := os.ReadFile(filepath.Join(run, "report.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(html), "First turn that named a root cause") {
		t.Error("report.html has no analysis section")
	}

	// The same run twice, side by side: one row per run, then one for their model.
	r = aaGrade(t, nil, "analyze", run, run)
	if r.code != 0 || strings.Count(r.stdout, "openai/fake") != 3 {
		t.Errorf("analyze of two runs: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
