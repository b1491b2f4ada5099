package model

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Limits are the rate limits of one provider, shared by every episode of a run.
type Limits struct {
	// MaxInFlight is the most calls waiting for an answer at once (1 or more). 429s and
	// overload answers lower the allowance below it for a while (AIMD, see Limiter).
	MaxInFlight int
	RPM         int   // requests per minute; 0: no limit
	TPM         int64 // tokens per minute, input and output; 0: no limit
	Clock       Clock // nil: the system clock
}

// Clock is the limiter's time, injected so tests control it.
type Clock interface {
	Now() time.Time
	// After is time.After: a timer dropped before it fires is collected (Go 1.23 and later).
	After(d time.Duration) <-chan time.Time
}

type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// Limiter paces the calls a run makes to one provider, so that many parallel episodes share
// its quota instead of each retrying its own 429s: at most a number of calls in flight,
// request and token buckets refilled per minute, and AIMD adaptation of the in-flight
// allowance (halved on each 429 or overload answer, raised by one after as many successes
// in a row as the allowance, as TCP grows its window). Callers are served first come, first
// served, so a large request is not starved by small ones. A nil *Limiter limits nothing.
type Limiter struct {
	clock   Clock
	ceiling int // Limits.MaxInFlight

	mu        sync.Mutex
	allowed   int    // calls allowed in flight now, 1..ceiling
	inFlight  int    // calls holding a permit
	successes int    // successes since allowed last changed
	epoch     uint64 // how many times allowed was halved
	requests  bucket
	tokens    bucket
	queue     []*waiter // callers waiting, in order of arrival
}

// waiter is a caller in the queue; only the head may take a permit, the others wait to be
// woken when they become the head.
type waiter struct{ wake chan struct{} }

// Permit is one call's hold on the limiter, handed back with Release.
type Permit struct {
	tokens int64  // charged to the token bucket before the call
	epoch  uint64 // the limiter's epoch when the call was let through
}

// NewLimiter checks the limits and returns a limiter with every bucket full.
func NewLimiter(l Limits) (*Limiter, error) {
	switch {
	case l.MaxInFlight < 1:
		return nil, fmt.Errorf("rate limits: %d calls in flight: must be 1 or more", l.MaxInFlight)
	case l.RPM < 0 || l.RPM > maxPerMinute:
		return nil, fmt.Errorf("rate limits: %d requests per minute: must be 0 (no limit) to %d", l.RPM, int64(maxPerMinute))
	case l.TPM < 0 || l.TPM > maxPerMinute:
		return nil, fmt.Errorf("rate limits: %d tokens per minute: must be 0 (no limit) to %d", l.TPM, int64(maxPerMinute))
	}
	clock := l.Clock
	if clock == nil {
		clock = systemClock{}
	}
	now := clock.Now()
	return &Limiter{clock: clock, ceiling: l.MaxInFlight, allowed: l.MaxInFlight,
		requests: newBucket(int64(l.RPM), now), tokens: newBucket(l.TPM, now)}, nil
}

// Acquire waits until a call of about tokens tokens may go: its turn in the queue, a free
// in-flight slot, a request and the tokens in the buckets. It returns ctx.Err() when ctx
// ends first, leaving the buckets and slots as they were; when ctx is already done it
// still succeeds if nothing needs waiting for.
func (l *Limiter) Acquire(ctx context.Context, tokens int64) (Permit, error) {
	if l == nil {
		return Permit{}, nil
	}
	l.mu.Lock()
	if len(l.queue) == 0 {
		if p, _, ok := l.admit(tokens); ok {
			l.mu.Unlock()
			return p, nil
		}
	}
	w := &waiter{wake: make(chan struct{}, 1)}
	l.queue = append(l.queue, w)
	for {
		var timer <-chan time.Time
		if l.queue[0] == w {
			p, wait, ok := l.admit(tokens)
			if ok {
				l.leave(w)
				l.mu.Unlock()
				return p, nil
			}
			if wait > 0 {
				timer = l.clock.After(wait)
			}
		}
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.leave(w)
			l.mu.Unlock()
			return Permit{}, ctx.Err()
		case <-w.wake:
		case <-timer:
		}
		l.mu.Lock()
	}
}

// Release hands a permit back once the call has its answer (or its error), corrects the
// token bucket with the usage the answer reports, and adapts the in-flight allowance. When
// the allowance changed it returns the "throttle" event to record.
func (l *Limiter) Release(p Permit, answer []byte, callErr error) (Event, bool) {
	if l == nil {
		return Event{}, false
	}
	var used int64
	if callErr == nil && l.tokens.perMinute > 0 {
		used = reportedTokens(answer)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	if used > 0 {
		l.tokens.charge(used - p.tokens)
	}
	defer l.wakeHead()
	var apiErr *APIError
	switch {
	case errors.As(callErr, &apiErr) && overloaded(apiErr.Status):
		// Calls let through before the last halving saw the old allowance: their 429s are
		// the same congestion and must not halve it again.
		if p.epoch != l.epoch {
			return Event{}, false
		}
		l.successes = 0
		if l.allowed == 1 {
			return Event{}, false
		}
		l.allowed /= 2
		l.epoch++
		return Event{Kind: "throttle", Status: apiErr.Status, MaxInFlight: l.allowed}, true
	case callErr == nil:
		if l.allowed == l.ceiling {
			return Event{}, false
		}
		if l.successes++; l.successes < l.allowed {
			return Event{}, false
		}
		l.allowed++
		l.successes = 0
		return Event{Kind: "throttle", Status: http.StatusOK, MaxInFlight: l.allowed}, true
	}
	return Event{}, false // other failures say nothing about the provider's load
}

// admit lets a call of tokens go if it may now: a free slot and enough in the buckets.
// Otherwise it says how long the buckets need (0 when a slot is what is missing). l.mu is
// held.
func (l *Limiter) admit(tokens int64) (p Permit, wait time.Duration, ok bool) {
	if l.inFlight >= l.allowed {
		return Permit{}, 0, false
	}
	now := l.clock.Now()
	if wait := max(l.requests.wait(now, 1), l.tokens.wait(now, tokens)); wait > 0 {
		return Permit{}, wait, false
	}
	l.requests.charge(1)
	l.tokens.charge(tokens)
	l.inFlight++
	return Permit{tokens: tokens, epoch: l.epoch}, 0, true
}

// leave takes w out of the queue and wakes the next head. l.mu is held.
func (l *Limiter) leave(w *waiter) {
	if i := slices.Index(l.queue, w); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	l.wakeHead()
}

// wakeHead tells the caller at the head of the queue to look again. l.mu is held.
func (l *Limiter) wakeHead() {
	if len(l.queue) > 0 {
		select {
		case l.queue[0].wake <- struct{}{}:
		default: // already told
		}
	}
}

// overloaded reports the answers that mean "slow down": 429 rate limits, OpenAI's 503 "slow
// down" and Anthropic's 529 overloaded.
func overloaded(status int) bool {
	return status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == 529
}

// estimateTokens guesses the input tokens of a request before it is sent: its JSON bytes / 4.
// English text runs about four characters per token, and JSON quoting and structure add
// bytes, so the guess errs high. Output tokens are unknown until the answer; Release then
// replaces the guess with the usage the provider reports.
func estimateTokens(body []byte) int64 { return int64(len(body)/4) + 1 }

// reportedTokens reads what an answer counts against a tokens-per-minute limit:
// usage.total_tokens (OpenAI Chat Completions and Responses), else input, cache writes and
// output (Anthropic, whose limits leave cache reads out); 0 when the answer reports none.
func reportedTokens(answer []byte) int64 {
	u := gjson.GetBytes(answer, "usage")
	total := u.Get("total_tokens")
	n := total.Int()
	if !total.Exists() {
		n = u.Get("input_tokens").Int() + u.Get("cache_creation_input_tokens").Int() + u.Get("output_tokens").Int()
	}
	return min(max(n, 0), maxPerMinute) // a hostile answer must not overflow the bucket
}

// maxPerMinute bounds rates and counted tokens so bucket arithmetic cannot overflow.
const maxPerMinute = 1e10

// bucketScale is the bucket's fixed-point unit: a token is worth this many, and a bucket of
// N per minute gains N units per microsecond. Integers keep waits exact: after waiting what
// wait said, the tokens are there.
const bucketScale = int64(time.Minute / time.Microsecond)

// bucket is a token bucket holding up to perMinute tokens and refilled at perMinute per
// minute, so a full minute's quota may go at once and the rest follows at an even pace.
// Charges may drive it below zero (a request bigger than the bucket, a reply longer than
// guessed): that debt is paid back by waiting.
type bucket struct {
	perMinute int64 // 0: no limit
	level     int64 // in bucketScale units
	last      time.Time
}

func newBucket(perMinute int64, now time.Time) bucket {
	return bucket{perMinute: perMinute, level: perMinute * bucketScale, last: now}
}

// refill adds what has flowed in since the last refill.
func (b *bucket) refill(now time.Time) {
	full := b.perMinute * bucketScale
	micros := int64(now.Sub(b.last) / time.Microsecond)
	if micros <= 0 {
		return
	}
	if toFull := (full - b.level + b.perMinute - 1) / b.perMinute; micros >= toFull {
		b.level, b.last = full, now
		return
	}
	b.level += b.perMinute * micros
	b.last = b.last.Add(time.Duration(micros) * time.Microsecond)
}

// wait is how long until n tokens may be taken: 0 now. A request bigger than the bucket
// waits for a full bucket.
func (b *bucket) wait(now time.Time, n int64) time.Duration {
	if b.perMinute == 0 {
		return 0
	}
	b.refill(now)
	need := min(n, b.perMinute)*bucketScale - b.level
	if need <= 0 {
		return 0
	}
	return time.Duration((need+b.perMinute-1)/b.perMinute) * time.Microsecond
}

// charge takes n tokens, or gives -n back (never above full).
func (b *bucket) charge(n int64) {
	if b.perMinute == 0 {
		return
	}
	b.level = min(b.level-n*bucketScale, b.perMinute*bucketScale)
}
