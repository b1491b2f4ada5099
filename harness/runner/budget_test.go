package runner

import (
	"errors"
	"fmt"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

func cost(e runfolder.Episode, usd float64) runfolder.Result {
	return runfolder.Result{Task: e.Task, Repeat: e.Repeat, CostUSD: &usd}
}

func ep(i int) runfolder.Episode { return runfolder.Episode{Task: fmt.Sprint("t", i), Repeat: 1} }

// TestBudget: episodes start while the spend plus a projection of the running ones (the mean
// cost so far, else the prior, or what a running one spent when more) stays within the
// budget; the folder's earlier spend counts.
func TestBudget(t *testing.T) {
	b := newBudget(10, 3, 2, map[runfolder.Episode]runfolder.Result{ep(0): cost(ep(0), 2)})
	// Spent 2, mean 2: a third running episode would project 2 + 3x2 = 8; a fifth, 12.
	for i := range 4 {
		if err := b.admit(ep(i + 1)); err != nil {
			t.Fatalf("episode %d refused: %v", i+1, err)
		}
	}
	if err := b.admit(ep(5)); !errors.Is(err, ErrBudget) {
		t.Fatalf("a fifth episode: %v", err)
	}
	b.charge(ep(1), 1)
	b.end(cost(ep(1), 1)) // spent 3, mean 1.5, 3 running: 3 + 4x1.5 = 9
	if err := b.admit(ep(5)); err != nil {
		t.Fatalf("after a cheap episode: %v", err)
	}
	// No budget: everything starts, and no spend stops anything.
	free := newBudget(0, 0, 0, nil)
	for i := range 100 {
		if err := free.admit(ep(i)); err != nil {
			t.Fatal(err)
		}
		if err := free.charge(ep(i), 1e9); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing spent yet: the prior projects.
	if err := newBudget(5, 6, 0, nil).admit(ep(1)); !errors.Is(err, ErrBudget) {
		t.Fatalf("a first episode projected over the budget: %v", err)
	}
}

// TestBudgetStopsRunning: the calls of running episodes count as they are answered; the spend
// reaching the budget stops them, and a running episode that spent more than the mean is
// projected at what it spent.
func TestBudgetStopsRunning(t *testing.T) {
	b := newBudget(10, 0, 1, map[runfolder.Episode]runfolder.Result{ep(0): cost(ep(0), 1)})
	for i := 1; i <= 2; i++ {
		if err := b.admit(ep(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.charge(ep(1), 6); err != nil { // 1 + 6 spent: under 10
		t.Fatalf("under the budget: %v", err)
	}
	// Projected: 1 spent + 6 (ep 1, above the mean of 1) + 1 (ep 2) + 1 (the new one) = 9;
	// one more would be 10, still within; ep 1 spending 2 more makes it 12.
	if err := b.admit(ep(3)); err != nil {
		t.Fatalf("a third running episode: %v", err)
	}
	b.charge(ep(1), 2)
	if err := b.admit(ep(4)); !errors.Is(err, ErrBudget) {
		t.Fatalf("a running episode's spend is not projected: %v", err)
	}
	err := b.charge(ep(2), 1) // 1 + 8 + 1 = 10: at the budget
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("the spend reached the budget: %v", err)
	}
	t.Log(err)
}

// TestBudgetKeepsWhatFailedEpisodesSpent: the calls of an episode that ended with no cost of
// its own (an error, played again later) stay spent; the old budget forgot them when the
// episode ended.
func TestBudgetKeepsWhatFailedEpisodesSpent(t *testing.T) {
	b := newBudget(5, 1, 0, nil)
	if err := b.admit(ep(1)); err != nil {
		t.Fatal(err)
	}
	b.charge(ep(1), 4)
	b.end(runfolder.Result{Task: ep(1).Task, Repeat: 1, Status: "error"})
	// 4 spent and 1 projected: a new episode fits exactly; 1 more spent reaches the budget.
	if err := b.admit(ep(2)); err != nil {
		t.Fatalf("within the budget: %v", err)
	}
	if err := b.charge(ep(2), 1); !errors.Is(err, ErrBudget) {
		t.Fatalf("the failed episode's $4 and $1 more reach the $5 budget: %v", err)
	}
}
