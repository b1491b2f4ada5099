package provider

import (
	"context"
	"errors"
	"time"

	"github.com/aa-grade/aa-grade/internal/backoff"
)

// ErrRetryStopped marks a call whose back-off was cut short (WithRetryStop): the run was
// interrupted, and its episode is unfinished rather than failed.
var ErrRetryStopped = errors.New("the retries were stopped")

type retryStopKey struct{}

// WithRetryStop makes the calls made with ctx stop retrying when stop closes: a back-off under
// way ends at once and the call fails with its last error and ErrRetryStopped. The run closes
// it on Ctrl-C, so that episodes waiting 30 s or more for an attempt do not use up the grace
// their running peers need, while the attempts under way go on.
func WithRetryStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, retryStopKey{}, stop)
}

// RetryStopOf is the channel WithRetryStop gave ctx; nil (never closed) when none.
func RetryStopOf(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(retryStopKey{}).(<-chan struct{})
	return stop
}

// SleepRetry waits d before another attempt: ctx's error when ctx ends first, ErrRetryStopped
// when ctx's retry stop (WithRetryStop) closes first.
func SleepRetry(ctx context.Context, d time.Duration) error {
	return backoff.SleepUnless(ctx, d, RetryStopOf(ctx), ErrRetryStopped)
}
