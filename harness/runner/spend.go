package runner

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// startLedger is what the folder spent before this run: the sum of its ledger, which a new run
// starts empty. A folder written before the ledger was kept starts one from its results, a
// line per episode with its last attempt's usage and cost (what its earlier attempts spent is
// not known), so that the spend a resume shows and counts is never less than the reports'.
func startLedger(f *runfolder.Folder) (*runfolder.Spend, error) {
	if f.Prev != nil && f.Prev.Spend != nil {
		return f.Prev.Spend, nil
	}
	if err := f.StartLedger(); err != nil {
		return nil, fmt.Errorf("start the ledger of spend: %w", err)
	}
	var spent runfolder.Spend
	if f.Prev == nil {
		return &spent, nil
	}
	for _, e := range slices.SortedFunc(maps.Keys(f.Prev.Results), byTaskAndRepeat) {
		r := f.Prev.Results[e]
		c := runfolder.Charge{Task: r.Task, Repeat: r.Repeat, Usage: r.Tokens, CostUSD: r.CostUSD}
		if c.CostUSD == nil && r.Tokens == (model.Usage{}) { // it failed before its first call
			c.CostUSD = f.Prev.Header.Prices.Cost(r.Tokens)
		}
		if err := f.Charge(c); err != nil {
			return nil, fmt.Errorf("start the ledger of spend from the results: %w", err)
		}
		spent.Add(c)
	}
	return &spent, nil
}

func byTaskAndRepeat(a, b runfolder.Episode) int {
	return cmp.Or(cmp.Compare(a.Task, b.Task), cmp.Compare(a.Repeat, b.Repeat))
}

// spentBefore is the known cost the budget starts from: the ledger's.
func spentBefore(ledger *runfolder.Spend) float64 {
	if ledger.CostUSD == nil {
		return 0
	}
	return *ledger.CostUSD
}

// Charged tells a model call was answered and recorded in the ledger (runfolder.SpendFile),
// whatever becomes of its episode.
type Charged struct{ Charge runfolder.Charge }

func (Charged) runEvent() {}
