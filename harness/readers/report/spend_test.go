package report

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestReportsShowTheSpendBesideTheScoredCost: an episode played again after an error leaves
// its first attempt's calls in the ledger; the reports say what the run spent in all (the
// ledger's sum) beside what its scored episodes cost (their last attempts).
func TestReportsShowTheSpendBesideTheScoredCost(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, runfolder.SpendFile), strings.Join([]string{
		`{"task":"Scenario-2","repeat":1,"usage":{"input":10},"cost_usd":0.03}`, // the attempt that failed
		`{"task":"Scenario-2","repeat":1,"usage":{"input":10},"cost_usd":0.02}`,
		`{"task":"Scenario-2","repeat":1,"usage":{"input":10},"cost_usd":0.025}`,
	}, "\n")+"\n")
	r := writeRun(t, dir, "m", []string{"Scenario-2"}, 1,
		result("Scenario-2", 1, "error", 0, 0.03), result("Scenario-2", 1, "ok", 1, 0.045))
	o := r.Overview()
	if o.Spent == nil {
		t.Fatal("no spend read from the ledger")
	}
	if got := *o.Spent.Known(); !near(got, 0.075) {
		t.Errorf("spent %v, want the ledger's 0.075", got)
	}
	if got := *o.CostUSD; !near(got, 0.045) {
		t.Errorf("scored cost %v, want the last attempt's 0.045", got)
	}
	textcheck.Has(t, "report.md", markdown(t, r), "Spent in all: $0.075 over 3 model calls", "the scored episodes cost $0.045")
	textcheck.Has(t, "report.html", renderHTML(t, r), `<td class="n w">$0.045<br><span class="muted">spent in all: $0.075</span></td>`)
}

// TestBoardNeverDrawsAnUnfinishedRunAsAResult: a run with nothing finished has no bar, score or
// interval on the leaderboard; a run partly finished says its score is so far, without an
// interval, and is drawn faded.
func TestBoardNeverDrawsAnUnfinishedRunAsAResult(t *testing.T) {
	base := t.TempDir()
	tasks := []string{"Scenario-1", "Scenario-2", "Scenario-3", "Scenario-4", "Scenario-5"}
	none := writeRun(t, filepath.Join(base, "none"), "m", tasks, 1, result("Scenario-1", 1, "unfinished", 0, 0.01))
	page := renderHTML(t, none)
	textcheck.Has(t, "the board of a run with nothing finished", page, "no score: none of 5 episodes finished")
	textcheck.Lacks(t, "the board of a run with nothing finished", page, "0.000 [", `<line class="ci"`)
	textcheck.Has(t, "report.md of a run with nothing finished", markdown(t, none), "**no score: none of 5 episodes finished**")

	part := writeRun(t, filepath.Join(base, "part"), "m", tasks, 1, result("Scenario-1", 1, "ok", 1, 0.01), result("Scenario-2", 1, "ok", 1, 0.01))
	page = renderHTML(t, part)
	textcheck.Has(t, "the board of a run partly finished", page, "0.400 so far: 2 of 5 episodes finished, the rest counted 0", `fill-opacity="0.35"`)
	textcheck.Lacks(t, "the board of a run partly finished", page, `<line class="ci"`)
}

// TestUnpricedRunCostsUnknown: a run without prices whose episodes counted no tokens costs
// "unknown", never $0 (its overview's cost is nil, so JSON says null).
func TestUnpricedRunCostsUnknown(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), `{"model": "m", "tasks": ["Scenario-1"], "repeats": 1}`)
	testfs.Write(t, filepath.Join(dir, runfolder.ResultsFile), `{"task":"Scenario-1","repeat":1,"status":"max_turns","turns":5,"cost_usd":null}`+"\n")
	testfs.Write(t, filepath.Join(dir, runfolder.SpendFile), `{"task":"Scenario-1","repeat":1,"usage":{"input":0},"cost_usd":null}`+"\n")
	o := load(t, dir).Overview()
	if o.CostUSD != nil {
		t.Errorf("cost %v, want unknown", *o.CostUSD)
	}
	if o.CostPerTask != nil {
		t.Errorf("$/task %v, want unknown", *o.CostPerTask)
	}
	textcheck.Has(t, "the spend", o.SpentText(), "unknown (1 call at unknown prices)")
}
