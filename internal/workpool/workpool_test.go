package workpool

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
)

// TestRunBoundsTheWorkers: every item is worked on once, and never more than n at once: the
// first n calls wait for one another, so a pool running fewer would hang and one running more
// would be seen.
func TestRunBoundsTheWorkers(t *testing.T) {
	const n = 3
	items := make([]int, 50)
	for i := range items {
		items[i] = i
	}
	var running, most atomic.Int32
	var seen sync.Map
	var barrier sync.WaitGroup
	barrier.Add(n)
	Run(context.Background(), n, items, func(i int) {
		now := running.Add(1)
		defer running.Add(-1)
		for old := most.Load(); now > old && !most.CompareAndSwap(old, now); old = most.Load() {
		}
		if i < n {
			barrier.Done()
			barrier.Wait()
		}
		if _, dup := seen.LoadOrStore(i, true); dup {
			t.Errorf("item %d worked on twice", i)
		}
	})
	if most.Load() != n {
		t.Fatalf("at most %d at once, want %d", most.Load(), n)
	}
	for i := range items {
		if _, ok := seen.Load(i); !ok {
			t.Errorf("item %d never worked on", i)
		}
	}
}

// TestRunStopsHandingOutWhenCancelled: once ctx ends no further item is worked on (the other
// worker may be in the middle of one).
func TestRunStopsHandingOutWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	// The count and the cancel are one step: otherwise the other worker could count several
	// calls between the 5th call's count and its cancel, which the pool cannot know of.
	var mu sync.Mutex
	calls := 0
	Run(ctx, 2, make([]struct{}, 100), func(struct{}) {
		mu.Lock()
		defer mu.Unlock()
		if calls++; calls == 5 {
			cancel()
		}
	})
	if c := calls; c < 5 || c > 6 {
		t.Fatalf("%d calls after a cancel at the 5th of 100 with 2 workers", c)
	}
}

// TestRunWithNothingToDo returns at once, and n below 1 means one worker.
func TestRunWithNothingToDo(t *testing.T) {
	Run(context.Background(), 4, []int(nil), func(int) { t.Error("called") })
	var calls atomic.Int32
	Run(context.Background(), 0, []int{1, 2}, func(int) { calls.Add(1) })
	if calls.Load() != 2 {
		t.Fatal(calls.Load())
	}
}
