package runner

import (
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestLedgerOfAnOlderFolder: a resume of a folder written before the ledger was kept starts one
// from its results (the last attempts' usage and cost, an episode that failed before its first
// call costing nothing at known prices), so its spend is never told as less than its reports'
// cost; a folder with a ledger keeps it as it is.
func TestLedgerOfAnOlderFolder(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), `{"model":"m","tasks":["a","b"],"repeats":1,"prices":{"input":1,"output":1}}`)
	testfs.Write(t, filepath.Join(dir, runfolder.ResultsFile),
		`{"task":"a","repeat":1,"status":"ok","tokens":{"input":1000000},"cost_usd":1}`+"\n"+`{"task":"b","repeat":1,"status":"error"}`+"\n")
	f, err := runfolder.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	spent, err := startLedger(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if spent.Calls != 2 {
		t.Errorf("the ledger started from the results has %d lines, want 2", spent.Calls)
	}
	if known := spent.Known(); known == nil || *known != 1 {
		t.Errorf("the ledger started from the results: %+v, want $1 all known", spent)
	}
	if spent.Tokens != (model.Usage{Input: 1000000}) {
		t.Errorf("tokens %+v", spent.Tokens)
	}
	f, err = runfolder.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	again, err := startLedger(f)
	if err != nil {
		t.Fatal(err)
	}
	if again.Calls != 2 {
		t.Errorf("the ledger read back has %d lines, want the 2 written (not started again)", again.Calls)
	}
}
