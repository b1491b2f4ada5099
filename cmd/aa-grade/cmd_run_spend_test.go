//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// ledger reads the run folder's spend.jsonl: its whole lines, and the sum of their costs.
func ledger(t *testing.T, dir string) (calls int, usd float64) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, runfolder.SpendFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSuffix(string(b), "\n"), "\n") {
		var c runfolder.Charge
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatalf("%s: a line that is not a call (%v): %q", runfolder.SpendFile, err, line)
		}
		calls++
		if c.CostUSD != nil {
			usd += *c.CostUSD
		}
	}
	return calls, usd
}

// spentOf reads what summary.json and `report --json` say a run spent in all.
func spentOf(t *testing.T, env []string, dir string) (summary, report *runfolder.Spend) {
	t.Helper()
	var s struct{ Spent *runfolder.Spend }
	b, err := os.ReadFile(filepath.Join(dir, runfolder.SummaryFile))
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	if err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	r := aaGrade(t, env, "report", "--json", dir)
	var runs []struct{ Spent *runfolder.Spend }
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("report --json: %v (exit %d)\n%s", err, r.code, r.stdout)
	}
	return s.Spent, runs[0].Spent
}

func sameUSD(a, b float64) bool { return math.Abs(a-b) < 1e-6 }

// checkSpent fails unless spent says the known amount usd over calls calls.
func checkSpent(t *testing.T, where string, spent *runfolder.Spend, calls int, usd float64) {
	t.Helper()
	switch {
	case spent == nil:
		t.Errorf("%s: no spend", where)
	case spent.Known() == nil:
		t.Errorf("%s: spend unknown, want $%v", where, usd)
	case !sameUSD(*spent.Known(), usd):
		t.Errorf("%s: spent $%v, want the ledger's $%v", where, *spent.Known(), usd)
	case spent.Calls != calls:
		t.Errorf("%s: %d calls, want the ledger's %d", where, spent.Calls, calls)
	}
}

// TestSpendAgreesEverywhere: a run stopped by --max-cost, then resumed with a higher budget
// that plays its stopped episodes again. What it spent in all is the ledger's sum in
// summary.json, in `report --json`, on run's cost line and in its summary; the budget counted
// the same spend; the scored episodes' cost (their last attempts) is less, as the stopped
// attempts were paid for too. The old code kept no ledger, and its reports summed only the
// last attempts.
func TestSpendAgreesEverywhere(t *testing.T) {
	env := fakeProvider(t, fakemodel.Script{Turns: 6, Command: "ls", Answer: answer901}, testKey).env
	out := filepath.Join(t.TempDir(), "run")
	// $1,000 a million prompt tokens: a call of this conversation costs about a dollar.
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901,902", "--repeats", "1", "--parallel", "2",
		"--price-input", "1000", "--price-output", "0", "--no-progress", "--out", out}
	r := aaGrade(t, env, append(args, "--max-cost", "3")...)
	r.wantExit(t, 1)
	calls, usd := ledger(t, out)
	if usd < 3 {
		t.Fatalf("the ledger sums $%v, under the $3 budget that stopped the run:\n%s", usd, r.stderr)
	}
	textcheck.Has(t, "the stopped run's stderr", r.stderr, fmt.Sprintf("cost: $%.2f spent", usd), "at the budget of $3.00")
	summary, report := spentOf(t, env, out)
	checkSpent(t, "summary.json", summary, calls, usd)
	checkSpent(t, "report --json", report, calls, usd)
	if t.Failed() {
		t.FailNow()
	}

	r = aaGrade(t, env, append(args, "--max-cost", "1000")...)
	r.wantExit(t, 0)
	textcheck.Has(t, "the resume's stderr", r.stderr, fmt.Sprintf("budget: $1000.00 (--max-cost), $%.3g of it spent already", usd))
	all, allUSD := ledger(t, out)
	if all <= calls {
		t.Errorf("%d calls in the ledger after the resume, want more than the %d before", all, calls)
	}
	summary, report = spentOf(t, env, out)
	checkSpent(t, "summary.json after the resume", summary, all, allUSD)
	checkSpent(t, "report --json after the resume", report, all, allUSD)
	textcheck.Has(t, "the resume's summary", r.stdout, fmt.Sprintf("Spent in all: %s over %d model calls", runfolder.FormatUSD(&allUSD), all))
	var runs []struct {
		CostUSD *float64 `json:"cost_usd"`
	}
	if err := json.Unmarshal([]byte(aaGrade(t, env, "report", "--json", out).stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("report --json: %v %+v", err, runs)
	}
	if runs[0].CostUSD == nil {
		t.Fatal("report --json: the scored episodes' cost is unknown at known prices")
	}
	if scored := *runs[0].CostUSD; scored >= allUSD-usd/2 {
		t.Errorf("the scored episodes cost $%v, want less than the $%v spent in all (the stopped attempts' calls)", scored, allUSD)
	}
}

// TestKillNineKeepsTheSpend kills a run with SIGKILL in the middle of its episodes, before any
// result is recorded: the calls they made are in the ledger, whole, and the reports of the
// folder say what they cost; the resume spends on top of them. The old code recorded nothing
// of an episode before its end.
func TestKillNineKeepsTheSpend(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 100, Command: "sleep 0.2", Answer: answer901}, "901,902", "1")
	out := filepath.Join(t.TempDir(), "run")
	priced := []string{"--price-input", "1000", "--price-output", "0"}
	cmd, _ := start(t, s.env, s.command(out, priced...)...)
	waitFor(t, func() bool { return lines(t, filepath.Join(out, runfolder.SpendFile)) >= 4 })
	syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	cmd.Wait()
	if n := lines(t, filepath.Join(out, runfolder.ResultsFile)); n != 0 {
		t.Fatalf("%d results before the kill, want none (the episodes were running)", n)
	}
	calls, usd := ledger(t, out)
	if calls < 4 {
		t.Fatalf("%d calls in the ledger after the kill, want 4 or more", calls)
	}
	r := aaGrade(t, s.env, "report", "--json", out)
	var runs []struct{ Spent *runfolder.Spend }
	if err := json.Unmarshal([]byte(r.stdout), &runs); err != nil || len(runs) != 1 {
		t.Fatalf("report --json of the killed run: %v\n%s", err, r.stdout)
	}
	checkSpent(t, "report --json of the killed run", runs[0].Spent, calls, usd)

	fast := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901,902", "1")
	r = aaGrade(t, fast.env, s.command(out, priced...)...)
	r.wantExit(t, 0)
	all, allUSD := ledger(t, out)
	if all != calls+6 { // two episodes of three calls each, played again
		t.Errorf("%d calls in the ledger after the resume, want the %d before and 6", all, calls)
	}
	summary, _ := spentOf(t, s.env, out)
	checkSpent(t, "summary.json after the resume", summary, all, allUSD)
}

// TestUnpricedRunSpendsUnknown: a run without prices says its cost and spend are unknown, in
// JSON (null) and in text, never $0.
func TestUnpricedRunSpendsUnknown(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 2, Command: "ls", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, s.env, s.command(out, "--no-progress")...)
	r.wantExit(t, 0)
	textcheck.Has(t, "the run's summary", r.stdout, "Spent in all: unknown (2 calls at unknown prices) over 2 model calls")
	j := aaGrade(t, s.env, "report", "--json", out)
	textcheck.Has(t, "report --json", j.stdout, `"cost_usd": null`, `"cost_per_task_usd": null`)
	textcheck.Lacks(t, "report --json", j.stdout, `"cost_usd": 0`)
	text := aaGrade(t, s.env, "report", out)
	row := strings.Split(text.stdout, "\n")[1]
	textcheck.Has(t, "report's row", row, "unknown  unknown  unknown (2 calls at unknown prices)")
	textcheck.Lacks(t, "report's row", row, "$0")
	summary, _ := spentOf(t, s.env, out)
	if summary == nil || summary.CostUSD != nil {
		t.Errorf("summary.json's spend %+v, want a null cost", summary)
	}
}
