package gateway

import (
	"context"
	"testing"
)

// TestByteBudget: a take waits while the budget cannot hold it (here: ends with its context,
// taking nothing), and succeeds once enough is given back; a take larger than the whole
// budget takes all of it.
func TestByteBudget(t *testing.T) {
	b := newByteBudget(4 * budgetUnit)
	held, err := b.take(context.Background(), 3*budgetUnit-1)
	if err != nil || held != 3 {
		t.Fatalf("took %d units (%v), want 3", held, err)
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if n, err := b.take(ended, 2*budgetUnit); err == nil {
		t.Fatalf("took %d units past the budget", n)
	}
	if free := cap(b.units) - len(b.units); free != 1 {
		t.Errorf("%d units free after a take that failed, want the 1 left", free)
	}
	b.give(held)
	if n, err := b.take(context.Background(), 2*budgetUnit); err != nil || n != 2 {
		t.Errorf("took %d units (%v) once given back, want 2", n, err)
	}
	b.give(2)
	if n, err := b.take(context.Background(), 100*budgetUnit); err != nil || n != 4 {
		t.Errorf("a take over the budget took %d units (%v), want all 4", n, err)
	}
}
