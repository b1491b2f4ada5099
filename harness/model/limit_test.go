package model

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness"
)

// fakeClock is a Clock that moves only when the test advances it.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []fakeTimer
}

type fakeTimer struct {
	at time.Time
	ch chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := fakeTimer{at: c.now.Add(d), ch: make(chan time.Time, 1)}
	c.timers = append(c.timers, t)
	return t.ch
}

// Advance moves the time on and fires the timers that are due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	pending := c.timers[:0]
	for _, t := range c.timers {
		if t.at.After(c.now) {
			pending = append(pending, t)
			continue
		}
		t.ch <- c.now
	}
	c.timers = pending
}

// pending is how many timers have not fired.
func (c *fakeClock) pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// eventually polls cond until it holds (the test's deadline bounds it); it asserts nothing
// about time.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if d, ok := t.Deadline(); ok && time.Until(d) < time.Second {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func newTestLimiter(t testing.TB, l Limits) *Limiter {
	t.Helper()
	lim, err := NewLimiter(l)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// state reads the limiter's counters under its lock.
func (l *Limiter) state() (allowed, inFlight, queued int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.allowed, l.inFlight, len(l.queue)
}

// acquireNow takes a permit that must need no waiting: with a context already done, Acquire
// succeeds only when nothing has to be waited for.
func acquireNow(t *testing.T, l *Limiter, tokens int64) Permit {
	t.Helper()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := l.Acquire(done, tokens)
	if err != nil {
		t.Fatalf("acquire %d tokens at once: %v", tokens, err)
	}
	return p
}

// acquireLater starts an Acquire and returns where its outcome will arrive.
func acquireLater(ctx context.Context, l *Limiter, tokens int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, tokens)
		done <- err
	}()
	return done
}

// raise makes most at least n.
func raise(most *atomic.Int32, n int32) {
	for m := most.Load(); n > m; m = most.Load() {
		if most.CompareAndSwap(m, n) {
			return
		}
	}
}

func blocked(done <-chan error) bool {
	select {
	case <-done:
		return false
	default:
		return true
	}
}

func TestNewLimiterRefusesBadLimits(t *testing.T) {
	for _, l := range []Limits{{MaxInFlight: 0}, {MaxInFlight: 1, RPM: -1}, {MaxInFlight: 1, TPM: -5}, {MaxInFlight: 1, TPM: 1e11}} {
		if lim, err := NewLimiter(l); err == nil || lim != nil || !strings.HasPrefix(err.Error(), "rate limits: ") {
			t.Errorf("%+v: limiter %v, err %v", l, lim, err)
		}
	}
}

// TestLimiterBoundsCallsInFlight: 8 goroutines call a server through a limiter allowing 2;
// the server holds every request until all 8 callers are either in flight or queued and
// every call let through has arrived, so a limiter letting more through is always caught.
func TestLimiterBoundsCallsInFlight(t *testing.T) {
	var inFlight, most, served atomic.Int32
	gate := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raise(&most, inFlight.Add(1))
		<-gate
		inFlight.Add(-1)
		served.Add(1)
		io.WriteString(w, `{"choices":[{"message":{"content":"ok"}}],"usage":{"total_tokens":10}}`)
	}))
	defer srv.Close()
	openGate := sync.OnceFunc(func() { close(gate) })
	defer openGate() // before srv.Close, which waits for the held requests
	lim := newTestLimiter(t, Limits{MaxInFlight: 2})
	m := &OpenAIChat{Options{Model: "m", BaseURL: srv.URL, Limit: lim}}
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := m.Complete(context.Background(), harness.Request{Messages: []harness.Message{{Role: harness.RoleUser, Content: "hi"}}})
			errs <- err
		}()
	}
	eventually(t, "every caller in flight or queued, and the calls let through at the server", func() bool {
		_, held, queued := lim.state()
		return held+queued == callers && int(inFlight.Load()) == held
	})
	if got := most.Load(); got != 2 {
		t.Fatalf("%d requests in flight at the server, want 2", got)
	}
	openGate()
	for range callers {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if got := most.Load(); got != 2 || served.Load() != callers {
		t.Fatalf("at most %d in flight, %d served", got, served.Load())
	}
	if _, held, queued := lim.state(); held != 0 || queued != 0 {
		t.Fatalf("after the calls: %d held, %d queued", held, queued)
	}
}

// TestLimiterRequestsPerMinute: a full minute's requests go at once, the next waits for the
// bucket to refill one request's worth (60 s / 3).
func TestLimiterRequestsPerMinute(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, RPM: 3, Clock: clock})
	for range 3 {
		acquireNow(t, lim, 1)
	}
	done := acquireLater(context.Background(), lim, 1)
	eventually(t, "the fourth request waits on the clock", func() bool { return clock.pending() == 1 })
	clock.Advance(19 * time.Second)
	if !blocked(done) || clock.pending() != 1 {
		t.Fatal("the fourth request went before its 20 s")
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// TestLimiterTokensPerMinute: tokens are charged as estimated, corrected with the usage the
// answer reports, and a request bigger than the whole bucket goes once the bucket is full.
func TestLimiterTokensPerMinute(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, TPM: 1000, Clock: clock})
	p := acquireNow(t, lim, 600)
	// The answer used 900 tokens, not 600: 100 are left, and 400 more need 300 at 1000/min.
	lim.Release(p, []byte(`{"usage":{"prompt_tokens":700,"completion_tokens":200,"total_tokens":900}}`), nil)
	done := acquireLater(context.Background(), lim, 400)
	eventually(t, "the request waits on the clock", func() bool { return clock.pending() == 1 })
	clock.Advance(17 * time.Second)
	if !blocked(done) {
		t.Fatal("400 tokens went with only 383 in the bucket")
	}
	clock.Advance(time.Second)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Oversized: 5000 tokens need a full bucket (a minute after it was emptied), then go.
	clock.Advance(time.Minute)
	big := acquireNow(t, lim, 5000)
	// Anthropic usage: 3000 uncached input + 1000 cache writes + 500 output = 4500; cache
	// reads do not count. The debt is 3500, so one more token needs 3501 / 1000 per minute.
	lim.Release(big, []byte(`{"usage":{"input_tokens":3000,"cache_creation_input_tokens":1000,"cache_read_input_tokens":9000,"output_tokens":500}}`), nil)
	after := acquireLater(context.Background(), lim, 1)
	eventually(t, "the next request waits on the clock", func() bool { return clock.pending() == 1 })
	clock.Advance(3*time.Minute + 30*time.Second)
	if !blocked(after) {
		t.Fatal("a request went while the bucket was in debt")
	}
	clock.Advance(60 * time.Millisecond)
	if err := <-after; err != nil {
		t.Fatal(err)
	}
}

func TestReportedAndEstimatedTokens(t *testing.T) {
	for answer, want := range map[string]int64{
		`{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`:                                         15,
		`{"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`:                                              15, // Responses API
		`{"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":400,"output_tokens":5}}`: 35,
		`{"choices":[]}`:                  0,
		`not json`:                        0,
		`{"usage":{"total_tokens":-7}}`:   0,
		`{"usage":{"total_tokens":1e30}}`: maxPerMinute,
	} {
		if got := reportedTokens([]byte(answer)); got != want {
			t.Errorf("%s: %d tokens, want %d", answer, got, want)
		}
	}
	if got := estimateTokens(make([]byte, 4000)); got != 1001 {
		t.Errorf("4000 bytes: %d tokens", got)
	}
}

// TestLimiterBacksOffOn429: a server refusing the first two requests with 429 halves the
// allowance twice (4, 2, 1); successes then raise it one at a time back to 4, each change
// recorded as a throttle event.
func TestLimiterBacksOffOn429(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached"}}`),
		status(529, `{"error":{"message":"Overloaded"}}`),
	}}
	for range 7 {
		f.answers = append(f.answers, status(200, `{"choices":[{"message":{"content":"ok"}}]}`))
	}
	m, events := newChat(t, f)
	lim := newTestLimiter(t, Limits{MaxInFlight: 4})
	m.Limit = lim
	var allowed []int
	for range 7 {
		if _, err := m.Complete(context.Background(), conversation); err != nil {
			t.Fatal(err)
		}
		a, _, _ := lim.state()
		allowed = append(allowed, a)
	}
	// The first call succeeds on its third attempt (1 success at 1 -> 2); then 2 successes
	// at 2 -> 3, 3 at 3 -> 4.
	if got, want := fmt.Sprint(allowed), "[2 2 3 3 3 4 4]"; got != want {
		t.Errorf("allowance after each call %s, want %s", got, want)
	}
	var throttles []string
	for _, e := range *events {
		if e.Kind == "throttle" {
			throttles = append(throttles, fmt.Sprintf("%d:%d", e.Status, e.MaxInFlight))
		}
	}
	if got, want := strings.Join(throttles, " "), "429:2 529:1 200:2 200:3 200:4"; got != want {
		t.Errorf("throttle events %q, want %q", got, want)
	}
}

// TestLimiterHalvesOncePerCongestion: calls let through together that all get a 429 halve
// the allowance once, not once each; other failures leave it alone.
func TestLimiterHalvesOncePerCongestion(t *testing.T) {
	lim := newTestLimiter(t, Limits{MaxInFlight: 8})
	var permits []Permit
	for range 4 {
		permits = append(permits, acquireNow(t, lim, 1))
	}
	rateLimited := &APIError{Status: http.StatusTooManyRequests, Message: "slow down"}
	var changes int
	for _, p := range permits {
		if e, changed := lim.Release(p, nil, rateLimited); changed {
			changes++
			if e.Kind != "throttle" || e.Status != 429 || e.MaxInFlight != 4 {
				t.Errorf("event %+v", e)
			}
		}
	}
	for _, err := range []error{&APIError{Status: 500, Message: "boom"}, errors.New("connection reset"), context.Canceled} {
		if _, changed := lim.Release(acquireNow(t, lim, 1), nil, err); changed {
			t.Errorf("%v changed the allowance", err)
		}
	}
	if allowed, held, _ := lim.state(); changes != 1 || allowed != 4 || held != 0 {
		t.Fatalf("%d changes, allowance %d, %d held", changes, allowed, held)
	}
}

// TestLimiterCancelWhileWaiting: a caller cancelled while waiting for a slot or for the
// bucket gets ctx.Err() and takes nothing: the slot and the request stay for the next one.
func TestLimiterCancelWhileWaiting(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 1, RPM: 2, Clock: clock})
	first := acquireNow(t, lim, 1)

	ctx, cancel := context.WithCancel(context.Background())
	forSlot := acquireLater(ctx, lim, 1)
	eventually(t, "a caller queued for the slot", func() bool { _, _, q := lim.state(); return q == 1 })
	cancel()
	if err := <-forSlot; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting for a slot: %v", err)
	}
	if _, held, queued := lim.state(); held != 1 || queued != 0 {
		t.Fatalf("after the cancel: %d held, %d queued", held, queued)
	}
	lim.Release(first, nil, nil)
	second := acquireNow(t, lim, 1) // the one slot is free again, and one request is left
	lim.Release(second, nil, nil)

	ctx, cancel = context.WithCancel(context.Background())
	forBucket := acquireLater(ctx, lim, 1)
	eventually(t, "a caller waits on the clock", func() bool { return clock.pending() == 1 })
	cancel()
	if err := <-forBucket; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting for the bucket: %v", err)
	}
	clock.Advance(30 * time.Second) // one request's worth: the cancelled caller took none
	lim.Release(acquireNow(t, lim, 1), nil, nil)
	if _, held, queued := lim.state(); held != 0 || queued != 0 {
		t.Fatalf("at the end: %d held, %d queued", held, queued)
	}
}

// TestPostWaitsForTheLimiterAndCancels: through a provider, a call waiting for the limiter
// returns the context's error and sends nothing.
func TestPostWaitsForTheLimiterAndCancels(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}}
	m, _ := newChat(t, f)
	m.Limit = newTestLimiter(t, Limits{MaxInFlight: 1})
	held := acquireNow(t, m.Limit, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, conversation)
		done <- err
	}()
	eventually(t, "the call queued", func() bool { _, _, q := m.Limit.state(); return q == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || len(f.received) != 0 {
		t.Fatalf("err %v after %d requests", err, len(f.received))
	}
	m.Limit.Release(held, nil, nil)
	if _, err := m.Complete(context.Background(), conversation); err != nil || len(f.received) != 1 {
		t.Fatalf("err %v after %d requests", err, len(f.received))
	}
}

// BenchmarkLimiter measures Acquire and Release with nothing to wait for (uncontended), with
// as many goroutines as cores sharing a limiter that lets all of them through (parallel),
// and sharing a single slot, so that each call waits for another's release (handoff).
func BenchmarkLimiter(b *testing.B) {
	ctx := context.Background()
	answer := []byte(`{"usage":{"total_tokens":1200}}`)
	b.Run("uncontended", func(b *testing.B) {
		lim := newTestLimiter(b, Limits{MaxInFlight: 4, RPM: maxPerMinute, TPM: maxPerMinute})
		b.ReportAllocs()
		for b.Loop() {
			p, err := lim.Acquire(ctx, 1000)
			if err != nil {
				b.Fatal(err)
			}
			lim.Release(p, answer, nil)
		}
	})
	for name, inFlight := range map[string]int{"parallel": 64, "handoff": 1} {
		b.Run(name, func(b *testing.B) {
			lim := newTestLimiter(b, Limits{MaxInFlight: inFlight, RPM: maxPerMinute, TPM: maxPerMinute})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := lim.Acquire(ctx, 1000)
					if err != nil {
						b.Error(err)
						return
					}
					lim.Release(p, answer, nil)
				}
			})
		})
	}
}

// TestPostBudgetLeavesOutPacing: a call that waited for the limiter longer than its retry
// budget still gets its retries: pacing is not failing.
func TestPostBudgetLeavesOutPacing(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(503, `{"error":{"message":"unavailable"}}`), status(200, toolAnswer)}}
	m, _ := newChat(t, f)
	m.Budget = 50 * time.Millisecond
	m.Limit = newTestLimiter(t, Limits{MaxInFlight: 1})
	held := acquireNow(t, m.Limit, 1)
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(context.Background(), conversation)
		done <- err
	}()
	eventually(t, "the call queued", func() bool { _, _, q := m.Limit.state(); return q == 1 })
	time.Sleep(2 * m.Budget) // the call waits for the limiter longer than its budget
	m.Limit.Release(held, nil, nil)
	if err := <-done; err != nil || len(f.received) != 2 {
		t.Fatalf("err %v after %d requests", err, len(f.received))
	}
}
