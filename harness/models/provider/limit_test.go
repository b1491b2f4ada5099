package provider

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

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
)

// The rate limiter's own tests are in package ratelimit; these are its use by post: every
// attempt waits for it, hands it the answer, and records what it did.

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

func newTestLimiter(t testing.TB, l ratelimit.Limits) *ratelimit.Limiter {
	t.Helper()
	lim, err := ratelimit.New(l)
	if err != nil {
		t.Fatal(err)
	}
	return lim
}

// acquireNow takes a permit that must need no waiting: with a context already done, Acquire
// succeeds only when nothing has to be waited for.
func acquireNow(t *testing.T, l *ratelimit.Limiter) ratelimit.Permit {
	t.Helper()
	done, cancel := context.WithCancel(context.Background())
	cancel()
	p, err := l.Acquire(done, 1, nil)
	if err != nil {
		t.Fatalf("acquire at once: %v", err)
	}
	return p
}

// raise makes most at least n.
func raise(most *atomic.Int32, n int32) {
	for m := most.Load(); n > m; m = most.Load() {
		if most.CompareAndSwap(m, n) {
			return
		}
	}
}

// TestPostKeepsToTheLimitersSlots: once the first answer came, 8 goroutines call a server
// through a limiter allowing 2; the server holds every request until each of the 8 callers is
// either queued at the limiter or held at the server, so a limiter letting more through is
// always caught.
func TestPostKeepsToTheLimitersSlots(t *testing.T) {
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
	lim := newTestLimiter(t, ratelimit.Limits{MaxInFlight: 2})
	lim.Release(acquireNow(t, lim), http.Header{}, []byte(`{}`), nil)
	m := &OpenAIChat{Options{Model: "m", BaseURL: srv.URL, Limit: lim}}
	const callers = 8
	errs := make(chan error, callers)
	for range callers {
		go func() {
			_, err := m.Complete(context.Background(),
				model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}})
			errs <- err
		}()
	}
	eventually(t, "every caller queued or at the server", func() bool {
		return lim.Status().Waiting+int(inFlight.Load()) == callers
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
	if got := most.Load(); got != 2 {
		t.Errorf("at most %d in flight, want 2", got)
	}
	if got := served.Load(); got != callers {
		t.Errorf("%d served, want %d", got, callers)
	}
	if waiting := lim.Status().Waiting; waiting != 0 {
		t.Errorf("after the calls: %d waiting", waiting)
	}
	acquireNow(t, lim) // both slots were handed back
	acquireNow(t, lim)
}

// TestPostHandsTheAnswersHeadersToTheLimiter: through a provider, the headers of an answer,
// a 429's too, reach the limiter.
func TestPostHandsTheAnswersHeadersToTheLimiter(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached"}}`, "x-ratelimit-limit-tokens", "90000", "retry-after-ms", "1"),
		status(200, toolAnswer, "x-ratelimit-limit-tokens", "100000", "x-ratelimit-limit-requests", "500"),
	}}
	m, _ := newChat(t, f)
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 4})
	if _, err := m.Complete(context.Background(), conversation); err != nil {
		t.Fatal(err)
	}
	s := m.Limit.Status()
	if s.Calls != 2 || s.RateLimited != 1 {
		t.Errorf("%d calls, %d rate limited; want 2 and 1", s.Calls, s.RateLimited)
	}
	var learnt []string
	for _, l := range s.Limits {
		learnt = append(learnt, fmt.Sprintf("%s %d", l.Name, l.Learnt))
	}
	if got, want := strings.Join(learnt, ", "), "requests 500, tokens 100000"; got != want {
		t.Errorf("limits learnt %q, want %q", got, want)
	}
}

// TestPostRecordsThrottles: a server refusing the first two requests with 429 and 529 halves
// the allowance twice (4, 2, 1); successes then raise it back to 4, each change recorded in
// the trajectory as a throttle event.
func TestPostRecordsThrottles(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached"}}`),
		status(529, `{"error":{"message":"Overloaded"}}`),
	}}
	for range 7 {
		f.answers = append(f.answers, status(200, `{"choices":[{"message":{"content":"ok"}}]}`))
	}
	m, events := newChat(t, f)
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 4})
	var throttles []string
	for call := range 7 {
		*events = nil
		if _, err := m.Complete(context.Background(), conversation); err != nil {
			t.Fatal(err)
		}
		for _, e := range *events {
			if e.Kind == model.KindThrottle {
				throttles = append(throttles, fmt.Sprintf("call %d %d:%d", call+1, e.Status, e.MaxInFlight))
			}
		}
	}
	// The first call succeeds on its third attempt (1 success at 1 -> 2); then 2 successes
	// at 2 -> 3, 3 at 3 -> 4.
	if got, want := strings.Join(throttles, ", "), "call 1 429:2, call 1 529:1, call 1 200:2, call 3 200:3, call 6 200:4"; got != want {
		t.Errorf("throttle events %q, want %q", got, want)
	}
}

// TestPostRecordsTheLimitersHolds: a call held by the limiter records why it waits ("queued")
// and how long it waited ("paced") between its request and its response; a call that goes at
// once records neither.
func TestPostRecordsTheLimitersHolds(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer), status(200, toolAnswer)}}
	m, events := newChat(t, f)
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 1})
	held := acquireNow(t, m.Limit)
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(context.Background(), conversation)
		done <- err
	}()
	eventually(t, "the call queued", func() bool { return m.Limit.Status().Waiting == 1 })
	m.Limit.Release(held, http.Header{}, []byte(`{}`), nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range *events {
		kinds = append(kinds, string(e.Kind))
		if e.Kind == model.KindQueued &&
			e.Reason != "the first call goes alone until an answer states the provider's limits" {
			t.Errorf("queued for %q", e.Reason)
		}
	}
	if got, want := strings.Join(kinds, " "), "request queued paced response"; got != want {
		t.Errorf("a held call recorded %q, want %q", got, want)
	}
	*events = nil
	if _, err := m.Complete(context.Background(), conversation); err != nil {
		t.Fatal(err)
	}
	kinds = nil
	for _, e := range *events {
		kinds = append(kinds, string(e.Kind))
	}
	if got, want := strings.Join(kinds, " "), "request response"; got != want {
		t.Errorf("a call that went at once recorded %q, want %q", got, want)
	}
}

// TestPostWaitsForTheLimiterAndCancels: through a provider, a call waiting for the limiter
// returns the context's error and sends nothing.
func TestPostWaitsForTheLimiterAndCancels(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}}
	m, _ := newChat(t, f)
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 1})
	held := acquireNow(t, m.Limit)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(ctx, conversation)
		done <- err
	}()
	eventually(t, "the call queued", func() bool { return m.Limit.Status().Waiting == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled call: %v, want context.Canceled", err)
	}
	if len(f.received) != 0 {
		t.Fatalf("a cancelled call sent %d requests", len(f.received))
	}
	m.Limit.Release(held, nil, nil, nil)
	if _, err := m.Complete(context.Background(), conversation); err != nil {
		t.Fatal(err)
	}
	if len(f.received) != 1 {
		t.Fatalf("%d requests after the next call, want 1", len(f.received))
	}
}

// TestPostBudgetLeavesOutPacing: a call that waited for the limiter longer than its retry
// budget still gets its retries: pacing is not failing.
func TestPostBudgetLeavesOutPacing(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(503, `{"error":{"message":"unavailable"}}`), status(200, toolAnswer)}}
	m, _ := newChat(t, f)
	m.Budget = 50 * time.Millisecond
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 1})
	held := acquireNow(t, m.Limit)
	done := make(chan error, 1)
	go func() {
		_, err := m.Complete(context.Background(), conversation)
		done <- err
	}()
	eventually(t, "the call queued", func() bool { return m.Limit.Status().Waiting == 1 })
	time.Sleep(2 * m.Budget) // the call waits for the limiter longer than its budget
	m.Limit.Release(held, nil, nil, nil)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(f.received) != 2 {
		t.Fatalf("%d requests, want 2 (one retry)", len(f.received))
	}
}
