package runfolder

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

func usd(v float64) *float64 { return &v }

// TestLedger: every call charged is read back in the sum, a call at unknown prices makes the
// sum partly known, a cut last line (a kill during a write) is dropped when the folder opens
// again, and summary.json says what the run spent.
func TestLedger(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteHeader(Header{Model: "m", Tasks: []string{"t"}, Repeats: 1}); err != nil {
		t.Fatal(err)
	}
	if err := f.StartLedger(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []Charge{
		{Task: "t", Repeat: 1, Usage: model.Usage{Input: 100, Output: 10}, CostUSD: usd(0.02)},
		{Task: "t", Repeat: 1, Usage: model.Usage{Input: 100, Output: 10, WorstCase: true}, CostUSD: usd(0.03)},
	} {
		if err := f.Charge(c); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	cut, err := os.OpenFile(filepath.Join(dir, SpendFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	cut.WriteString(`{"task":"t","repeat":1,"usage":{"inp`)
	cut.Close()

	f, err = Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Charge(Charge{Task: "t", Repeat: 1, Usage: model.Usage{Input: 5}}); err != nil {
		t.Fatal(err)
	}
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Warnings) != 0 {
		t.Errorf("warnings %q: the cut line was not repaired", run.Warnings)
	}
	s := run.Spend
	if s == nil {
		t.Fatal("no spend read")
	}
	if s.Calls != 3 {
		t.Errorf("%d calls, want 3", s.Calls)
	}
	if s.Known() != nil {
		t.Errorf("known spend %v with a call at unknown prices, want nil", *s.Known())
	}
	textcheck.Has(t, "the spend", s.Text(), "at least $0.050", "1 of 3 calls at unknown prices", "1 call counted at its worst case")
	if err := f.WriteSummary(grader.Summary{}, s); err != nil {
		t.Fatal(err)
	}
	var written struct{ Spent Spend }
	b, _ := os.ReadFile(filepath.Join(dir, SummaryFile))
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if written.Spent.Unpriced != 1 {
		t.Errorf("summary.json: %s", b)
	}
}

// TestSpendUnknownIsNeverZero: a run with no prices spent an unknown amount, in JSON (null)
// and in text ("unknown"); a folder without a ledger has no spend at all.
func TestSpendUnknownIsNeverZero(t *testing.T) {
	var s Spend
	s.Add(Charge{Task: "t", Repeat: 1, Usage: model.Usage{Input: 1000}})
	b, _ := json.Marshal(s)
	if !strings.Contains(string(b), `"cost_usd":null`) {
		t.Errorf("JSON %s, want a null cost", b)
	}
	textcheck.Has(t, "the text", s.Text(), "unknown (1 call at unknown prices)")
	textcheck.Lacks(t, "the text", s.Text(), "$0")
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, HeaderFile), header)
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if run.Spend != nil {
		t.Errorf("a folder without a ledger: spend %+v, want nil", run.Spend)
	}
}
