// Package workpool runs one function over a list of items with a bounded number of
// goroutines: the worker pool that downloads, hash checks, judge calls and episodes share, so
// that each says only what it does with one item.
package workpool

import (
	"context"
	"sync"
)

// Run calls work on items, at most n at once (n < 1: one), handing them out in order until
// ctx is done, and returns once every call has returned. An item not handed out, or handed
// out as ctx ended, is not worked on. work runs on other goroutines, so what it shares needs
// a lock.
func Run[T any](ctx context.Context, n int, items []T, work func(T)) {
	queue := make(chan T)
	var wg sync.WaitGroup
	for range min(max(n, 1), max(len(items), 1)) {
		wg.Go(func() {
			for item := range queue {
				if ctx.Err() != nil {
					continue // handed over as ctx ended
				}
				work(item)
			}
		})
	}
feed:
	for _, item := range items {
		select {
		case queue <- item:
		case <-ctx.Done():
			break feed
		}
	}
	close(queue)
	wg.Wait()
}
