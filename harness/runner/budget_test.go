package runner

import (
	"errors"
	"testing"

	"github.com/aa-grade/aa-grade/harness/runfolder"
)

func cost(usd float64) runfolder.Result { return runfolder.Result{CostUSD: &usd} }

// TestBudget: episodes start while the spend plus a projection of the running ones (the mean
// cost so far, else the prior) stays within the budget; the folder's earlier results count.
func TestBudget(t *testing.T) {
	b := newBudget(10, 3, map[runfolder.Episode]runfolder.Result{{Task: "a", Repeat: 1}: cost(2)})
	// Spent 2, mean 2: a third running episode would project 2 + 3x2 = 8; a fifth, 12.
	for i := range 4 {
		if err := b.admit(); err != nil {
			t.Fatalf("episode %d refused: %v", i+1, err)
		}
	}
	if err := b.admit(); !errors.Is(err, ErrBudget) {
		t.Fatalf("a fifth episode: %v", err)
	}
	b.ended(cost(1)) // spent 3, mean 1.5, 3 running: 3 + 4x1.5 = 9
	if err := b.admit(); err != nil {
		t.Fatalf("after a cheap episode: %v", err)
	}
	// No budget: everything starts.
	free := newBudget(0, 0, nil)
	for range 100 {
		if err := free.admit(); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing spent yet: the prior projects.
	if err := newBudget(5, 6, nil).admit(); !errors.Is(err, ErrBudget) {
		t.Fatalf("a first episode projected over the budget: %v", err)
	}
}
