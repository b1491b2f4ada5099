// Package backoff computes waits between retries of a remote call: exponential with jitter,
// or what the server asked for with Retry-After.
package backoff

import (
	"context"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Policy is the backoff of one kind of call.
type Policy struct {
	Base          time.Duration // the first wait; each later one doubles
	Max           time.Duration // the longest computed wait
	MaxRetryAfter time.Duration // the longest Retry-After honoured
}

// Delay is the wait before retry number attempt (from 1): Retry-After when the server gave
// one, else an exponential wait with jitter in its upper half.
func (p Policy) Delay(attempt int, retryAfter time.Duration) time.Duration {
	if retryAfter > 0 {
		return min(retryAfter, p.MaxRetryAfter)
	}
	wait := min(p.Base<<(min(attempt, 30)-1), p.Max)
	return wait/2 + rand.N(wait/2+1)
}

// Sleep waits d, or less if ctx ends first (then it returns ctx's error).
func Sleep(ctx context.Context, d time.Duration) error { return SleepUnless(ctx, d, nil, nil) }

// SleepUnless waits d, or less if ctx ends first (then it returns ctx's error) or stop closes
// first (then it returns stopped); a nil stop never closes.
func SleepUnless(ctx context.Context, d time.Duration, stop <-chan struct{}, stopped error) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-stop:
		return stopped
	case <-t.C:
		return nil
	}
}

// RetryAfter reads a Retry-After header: seconds or an HTTP date; 0 when absent or unreadable.
func RetryAfter(v string) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.Atoi(v); err == nil && s >= 0 {
		return time.Duration(s) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(time.Until(t), 0)
	}
	return 0
}
