package main

import (
	"fmt"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// spentBefore says what the folder's earlier runs spent, which a budget counts: its ledger's
// sum, or, in a folder written before the ledger was kept, what its results cost (all such a
// folder knows).
func spentBefore(prev *runfolder.Run) string {
	switch {
	case prev == nil:
		return "$0"
	case prev.Spend != nil:
		return prev.Spend.Text()
	}
	total := 0.0
	for _, r := range prev.Results {
		total += orZero(r.CostUSD)
	}
	return fmt.Sprintf("%s (its results' cost: the folder has no %s)", runfolder.FormatUSD(&total), runfolder.SpendFile)
}
