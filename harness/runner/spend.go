package runner

import (
	"fmt"

	"github.com/aa-grade/aa-grade/harness/runfolder"
)

// startLedger is what the folder spent before this run: the sum of its ledger, which a new run
// starts empty. It is nil for a folder written before the ledger was kept: what its earlier
// attempts spent is not known in all, so the run's total is not told either (the new calls
// are still recorded).
func startLedger(f *runfolder.Folder) (*runfolder.Spend, error) {
	if f.Prev != nil {
		return f.Prev.Spend, nil
	}
	if err := f.StartLedger(); err != nil {
		return nil, fmt.Errorf("start the ledger of spend: %w", err)
	}
	return &runfolder.Spend{}, nil
}

// spentBefore is the known cost the budget starts from: the ledger's, or, in a folder without
// one, the earlier results' (each episode's last attempt: all that such a folder knows).
func spentBefore(ledger *runfolder.Spend, done map[runfolder.Episode]runfolder.Result) float64 {
	if ledger != nil {
		if ledger.CostUSD == nil {
			return 0
		}
		return *ledger.CostUSD
	}
	var usd float64
	for _, r := range done {
		if r.CostUSD != nil {
			usd += *r.CostUSD
		}
	}
	return usd
}

// Charged tells a model call was answered and recorded in the ledger (runfolder.SpendFile),
// whatever becomes of its episode.
type Charged struct{ Charge runfolder.Charge }

func (Charged) runEvent() {}
