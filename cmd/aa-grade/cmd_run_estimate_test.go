//go:build linux

package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestDryRun: --dry-run says what would run and what it should cost, and calls nothing: no
// request reaches the provider and no run folder is made. A preset with a published cost a
// task is estimated from it; a spec with neither published cost nor prices is "unknown", with
// why.
func TestDryRun(t *testing.T) {
	srv := fakeProvider(t, fakemodel.Script{Turns: 1}, testKey) // Anthropic's variables point at it too
	env := append(srv.env, "ANTHROPIC_BASE_URL="+srv.url, "ANTHROPIC_API_KEY="+testKey)
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, env, "run", "--dataset", "demo", "--model", "claude-opus-4-7-max", "--limit", "2", "--repeats", "3", "--dry-run", "--out", out)
	for _, want := range []string{"would run 2 tasks x 3 repeats = 6 episodes of demo with claude-opus-4-7-max (anthropic/claude-opus-4-7)",
		"tasks: Scenario-901, Scenario-902", "estimate: about $32.28 for 6 episodes at the published $5.38 a task"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the dry run does not say %q", want)
		}
	}
	if r.code != 0 || srv.Requests() != 0 {
		t.Fatalf("exit %d after %d requests\n%s%s", r.code, srv.Requests(), r.stdout, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("the dry run made the run folder")
	}
	// No key: the dry run says which variable the run will need, and exits 0.
	r = aaGrade(t, srv.env[:1], "run", "--dataset", "demo", "--model", "claude-opus-4-7-max", "--limit", "1", "--repeats", "1", "--dry-run", "--out", out)
	if r.code != 0 || !textcheck.Has(t, "a dry run without the key", r.stdout, "estimate: about $5.38", "needs: ANTHROPIC_API_KEY, which is not set; the run will need it") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Prices and no published cost a task: the prices times the tokens of the nearest preset.
	r = aaGrade(t, srv.env[:1], "run", "--dataset", "demo", "--model", "openai-api/lab/m", "--price-input", "5", "--price-output", "25", "--limit", "1", "--repeats", "1", "--dry-run", "--out", out)
	if r.code != 0 || !textcheck.Has(t, "a dry run with prices", r.stdout, "estimate: about $5.38 for 1 episode at your prices x the tokens a task of Claude Opus 4.7", "needs: LAB_BASE_URL, which is not set") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = aaGrade(t, env, "run", "--dataset", "demo", "--model", "openai/some-model", "--limit", "1", "--repeats", "1", "--dry-run", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "estimate: unknown: openai/some-model has no published cost a task and no prices (--price-input and --price-output give them)") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCostEstimateOfAResume: with prices and no published cost a task, a resume estimates
// the episodes left from the mean tokens of those finished, and says so.
func TestCostEstimateOfAResume(t *testing.T) {
	prev := &runfolder.Run{Results: map[runfolder.Episode]runfolder.Result{
		{Task: "Scenario-1", Repeat: 1}: {Task: "Scenario-1", Repeat: 1, Status: grader.StatusOK, Tokens: model.Usage{Input: 300_000, Output: 10_000}},
		{Task: "Scenario-2", Repeat: 1}: {Task: "Scenario-2", Repeat: 1, Status: grader.StatusOK, Tokens: model.Usage{Input: 100_000, Output: 30_000}},
		{Task: "Scenario-3", Repeat: 1}: {Task: "Scenario-3", Repeat: 1, Status: grader.StatusError},
	}}
	got := costEstimate(models.Settings{Spec: "openai-api/lab/m", Prices: &model.Prices{Input: 1, Output: 10}}, 10, prev)
	// 200,000 input tokens at $1 and 20,000 output tokens at $10 a million: $0.40 an episode.
	textcheck.Has(t, "the estimate", got, "estimate: about $4.00 for 10 episodes at your prices x the mean tokens of the 2 episodes already in the folder (200,000 input, 20,000 output an episode)")
}

// TestCostEstimate: every case the estimate line tells apart.
func TestCostEstimate(t *testing.T) {
	for _, c := range []struct {
		settings models.Settings
		want     string
	}{
		{models.Settings{Spec: models.BaselineSpec, Prices: &model.Prices{}}, ""},
		{models.Settings{Spec: "replay/runs/x"}, ""},
		{models.Settings{Spec: "anthropic/claude-opus-4-7", Preset: "claude-opus-4-7-max"}, "estimate: about $53.80 for 10 episodes at the published $5.38 a task of Claude Opus 4.7 (Adaptive Reasoning, Max Effort)"},
		{models.Settings{Spec: "openai-api/vllm/q", Prices: &model.Prices{}},
			"estimate: $0 (the prices given make the model free)"},
		{models.Settings{Spec: "openai/gpt-5.5", Preset: "gpt-5.5-xhigh", Prices: &model.Prices{Input: 5, Output: 30}},
			"estimate: about $53.80-$64.56 for 10 episodes at your prices x the tokens a task of Claude Opus 4.7 (Adaptive Reasoning, Max Effort), the preset of the nearest prices (its published $5.38 a task at $5/$25 per million input/output; the range is the split of its tokens, not published)"},
		{models.Settings{Spec: "openai-api/lab/m", Prices: &model.Prices{Input: 5, Output: 25}},
			"estimate: about $53.80 for 10 episodes at your prices x the tokens a task of Claude Opus 4.7 (Adaptive Reasoning, Max Effort)"},
	} {
		if got := costEstimate(c.settings, 10, nil); !strings.HasPrefix(got, c.want) || (c.want == "" && got != "") {
			t.Errorf("%+v: %q, want %q", c.settings, got, c.want)
		}
	}
}

// TestMaxCost: with --max-cost a run starts no episode once the spend plus the projection of
// the running ones would pass it (exit 1, saying how to go on), and the same command with a
// higher budget plays the rest; a budget without prices is refused.
func TestMaxCost(t *testing.T) {
	env := fakeProvider(t, fakemodel.Script{Turns: 1, Answer: answer901}, testKey).env
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901,902,903", "--repeats", "1", "--parallel", "1",
		"--price-input", "1000", "--price-output", "1000", "--no-progress", "--out", out}
	// An episode costs about $2.70 (two calls), so a budget of $4 plays one and starts no other.
	r := aaGrade(t, env, append(args, "--max-cost", "4")...)
	r.wantExit(t, 1)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if n := strings.Count(string(results), "\n"); n != 1 {
		t.Errorf("%d results, want 1:\n%s", n, results)
	}
	textcheck.Has(t, "results.jsonl", string(results), `"status":"ok"`)
	if !textcheck.Has(t, "the last line of stderr", lastLine(r.stderr), "over the budget of $4.00", "a higher --max-cost") || t.Failed() {
		t.FailNow()
	}
	r = aaGrade(t, env, append(args, "--max-cost", "100000")...)
	r.wantExit(t, 0)
	results, _ = os.ReadFile(filepath.Join(out, "results.jsonl"))
	if n := strings.Count(string(results), "\n"); n != 3 {
		t.Errorf("with a higher budget: %d results, want 3:\n%s", n, results)
	}
	if !textcheck.Has(t, "stderr with a higher budget", r.stderr, "budget: $100000.00 (--max-cost), $") || t.Failed() {
		t.FailNow()
	}
	oneErrorLine(t, aaGrade(t, env, "run", "--dataset", "demo", "--model", "openai/fake", "--max-cost", "5", "--out", filepath.Join(t.TempDir(), "r")),
		"--max-cost 5: the model's prices are unknown, so its spend is unknown too; give them (a preset has them, or --price-input and --price-output)")
}

// TestMaxCostStopsRunning: an episode running when the spend reaches --max-cost is stopped
// there, recorded as cost_limit with what it cost (counted in the summary), and the run says
// so (exit 1); the same command with a higher budget plays it again, to its end.
func TestMaxCostStopsRunning(t *testing.T) {
	env := fakeProvider(t, fakemodel.Script{Turns: 10, Command: "ls", Answer: answer901}, testKey).env
	out := filepath.Join(t.TempDir(), "run")
	// $1 a prompt token: a call of this conversation costs hundreds of dollars, so the budget
	// is reached in the first turns of the ten.
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901", "--repeats", "1",
		"--price-input", "1000000", "--price-output", "0", "--no-progress", "--out", out}
	r := aaGrade(t, env, append(args, "--max-cost", "1500")...)
	r.wantExit(t, 1)
	if !textcheck.Has(t, "the last line of stderr", lastLine(r.stderr),
		"at the budget of $1500.00, so the running episodes were stopped (cost_limit)", "a higher --max-cost") {
		t.FailNow()
	}
	run, err := runfolder.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	stopped := run.Results[runfolder.Episode{Task: "Scenario-901", Repeat: 1}]
	if stopped.Status != grader.StatusCostLimit {
		t.Errorf("the stopped episode's status %s, want %s", stopped.Status, grader.StatusCostLimit)
	}
	if stopped.Turns >= 10 {
		t.Errorf("the stopped episode played %d turns, want fewer than 10", stopped.Turns)
	}
	if stopped.CostUSD == nil {
		t.Errorf("the stopped episode's cost unknown, want $1500 or more")
	} else if *stopped.CostUSD < 1500 {
		t.Errorf("the stopped episode cost $%.2f, want $1500 or more", *stopped.CostUSD)
	}
	if t.Failed() {
		t.FailNow()
	}
	// What it spent; no projection, with no episode whose result stands and no published cost.
	if !regexp.MustCompile(`\ncost: \$[0-9]+\.[0-9]{2} spent\n`).MatchString(r.stderr) {
		t.Errorf("the stopped run does not say what it spent:\n%s", r.stderr)
	}
	if !strings.Contains(r.stderr, "Scenario-901 repeat 1: cost_limit") {
		t.Errorf("the episode's line does not say it was stopped at the budget:\n%s", r.stderr)
	}
	report := aaGrade(t, env, "grade", out)
	if !strings.Contains(report.stdout, "1 cost_limit") {
		t.Errorf("grade does not count the episode stopped at the budget:\n%s", report.stdout)
	}
	r = aaGrade(t, env, append(args, "--max-cost", "1000000")...)
	if r.code != 0 {
		t.Fatalf("with a higher budget: exit %d\n%s", r.code, r.stderr)
	}
	if run, err = runfolder.Read(out); err != nil {
		t.Fatal(err)
	}
	if again := run.Results[runfolder.Episode{Task: "Scenario-901", Repeat: 1}]; again.Status != grader.StatusOK || again.Turns != 10 {
		t.Fatalf("played again: %+v", again)
	}
}
