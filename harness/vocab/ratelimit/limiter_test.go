package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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
	lim, err := New(l)
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

// bytesOf is the size of a request the limiter first takes to hold n input tokens (a token
// for each 4 bytes, and one).
func bytesOf(n int64) int { return int(4 * (n - 1)) }

// acquireNow takes a permit for a request of about tokens input tokens that must need no
// waiting: with a context already done, Acquire succeeds only when nothing has to be waited
// for.
func acquireNow(t *testing.T, l *Limiter, tokens int64) Permit {
	t.Helper()
	p, err := tryAcquire(l, tokens)
	if err != nil {
		t.Fatalf("acquire %d tokens at once: %v", tokens, err)
	}
	return p
}

// tryAcquire is Acquire with a context already done: it fails when the call would wait.
func tryAcquire(l *Limiter, tokens int64) (Permit, error) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	return l.Acquire(done, bytesOf(tokens), nil)
}

// acquireLater starts an Acquire and returns where its outcome will arrive.
func acquireLater(ctx context.Context, l *Limiter, tokens int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, bytesOf(tokens), nil)
		done <- err
	}()
	return done
}

// answered releases p with an answer that has the headers h (name, value, ...) and reports
// no usage.
func answered(l *Limiter, p Permit, h ...string) {
	header := http.Header{}
	for i := 0; i+1 < len(h); i += 2 {
		header.Set(h[i], h[i+1])
	}
	l.Release(p, header, []byte(`{}`), nil)
}

// waitsFor checks that done is still blocked just before d more on the clock, and goes at d.
func waitsFor(t *testing.T, clock *fakeClock, done <-chan error, d time.Duration) {
	t.Helper()
	eventually(t, "the call waits on the clock", func() bool { return clock.pending() == 1 })
	clock.Advance(d - 10*time.Millisecond)
	if !blocked(done) {
		t.Fatalf("the call went before its %v", d)
	}
	clock.Advance(10 * time.Millisecond)
	if err := <-done; err != nil {
		t.Fatal(err)
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

func TestNewRefusesBadLimits(t *testing.T) {
	for _, l := range []Limits{{MaxInFlight: 0}, {MaxInFlight: 1, RPM: -1}, {MaxInFlight: 1, TPM: -5}, {MaxInFlight: 1, TPM: 1e11}} {
		lim, err := New(l)
		switch {
		case err == nil:
			t.Errorf("%+v: accepted", l)
		case lim != nil:
			t.Errorf("%+v: a limiter besides the error %v", l, err)
		case !strings.HasPrefix(err.Error(), "rate limits: "):
			t.Errorf("%+v: %v, want it to start with \"rate limits: \"", l, err)
		}
	}
}

// TestLimiterFirstCallGoesAlone: until an answer comes, calls go one at a time, whatever the
// slots allow, so that the answer states the limits before a run's parallel episodes all
// send; a call that got no answer (a connection refused) leaves the next one alone too.
func TestLimiterFirstCallGoesAlone(t *testing.T) {
	lim := newTestLimiter(t, Limits{MaxInFlight: 4})
	first := acquireNow(t, lim, 100)
	if _, err := tryAcquire(lim, 100); err == nil {
		t.Fatal("a second call went before the first answer")
	}
	lim.Release(first, nil, nil, errors.New("connection refused"))
	second := acquireNow(t, lim, 100)
	waiting := acquireLater(context.Background(), lim, 100)
	eventually(t, "the third call queued", func() bool { _, _, q := lim.state(); return q == 1 })
	answered(lim, second)
	if err := <-waiting; err != nil {
		t.Fatal(err)
	}
	for range 3 { // the third is in flight: with the others, the four slots
		acquireNow(t, lim, 100)
	}
	if _, err := tryAcquire(lim, 100); err == nil {
		t.Fatal("a fifth call went with four slots")
	}
}

// TestLimiterSpreadsTheMinute: with --tpm 6000, calls of 1000 tokens go one every 9.09 s (the
// pace: a second's worth, refilled at the limit and 10% more), never a minute's quota at once,
// and the seventh waits for the first to leave the minute (the window), at 60.1 s.
func TestLimiterSpreadsTheMinute(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, TPM: 6000, Clock: clock})
	answered(lim, acquireNow(t, lim, 1000))
	pace := time.Minute * 1000 / 6600
	for range 5 {
		waitsFor(t, clock, acquireLater(context.Background(), lim, 1000), pace+10*time.Millisecond)
	}
	if s := lim.Status(); len(s.Limits) != 1 || s.Limits[0] != (InForce{Name: "tokens", Given: 6000, Used: 6000}) {
		t.Fatalf("limits %+v", s.Limits)
	}
	waitsFor(t, clock, acquireLater(context.Background(), lim, 1000), time.Minute+100*time.Millisecond-5*(pace+10*time.Millisecond))
}

// TestLimiterCorrectsWithUsage: a call is charged its request's bytes / 4 and the recent
// outputs' upper envelope, then what its answer reports; answers teach the tokens a byte
// holds, within bounds, and a hostile answer cannot stall the limiter.
func TestLimiterCorrectsWithUsage(t *testing.T) {
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, TPM: 1e9})
	p := acquireNow(t, lim, 1001)
	if want := [dimensions]int64{requests: 1, tokens: 1001, inputTokens: 1001}; p.charged != want {
		t.Fatalf("first call charged %v, want %v", p.charged, want)
	}
	lim.Release(p, http.Header{}, []byte(`{"usage":{"prompt_tokens":800,"completion_tokens":300,"total_tokens":1100}}`), nil)
	// 800 tokens in 4000 bytes: 0.2 a byte, averaged into 0.25 over 8 answers: 0.24375, and
	// 300 tokens of output.
	p = acquireNow(t, lim, 1001)
	if want := [dimensions]int64{requests: 1, tokens: 976 + 300, inputTokens: 976, outputTokens: 300}; p.charged != want {
		t.Fatalf("second call charged %v, want %v", p.charged, want)
	}
	if s := lim.Status(); s.Limits[0].Used != 1100+1276 {
		t.Fatalf("used %d, want the first call's usage and the second's charge", s.Limits[0].Used)
	}
	// A shorter output lowers the envelope by a sixteenth of the gap, a longer one raises it.
	lim.Release(p, http.Header{}, []byte(`{"usage":{"prompt_tokens":800,"completion_tokens":140}}`), nil)
	if lim.output != 290 {
		t.Fatalf("output envelope %d, want 290", lim.output)
	}
	lim.Release(acquireNow(t, lim, 10), http.Header{}, []byte(`{"usage":{"prompt_tokens":1e12,"completion_tokens":1e12}}`), nil)
	if lim.output != maxOutput || lim.perByte > maxPerByte {
		t.Fatalf("after a hostile answer: output %d, %g tokens a byte", lim.output, lim.perByte)
	}
}

// TestLimiterWaitsForAnEmptyWindowForAHugeCall: a call bigger than the whole limit goes once
// nothing is left in the minute.
func TestLimiterWaitsForAnEmptyWindowForAHugeCall(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, TPM: 6000, Clock: clock})
	answered(lim, acquireNow(t, lim, 100))
	waitsFor(t, clock, acquireLater(context.Background(), lim, 50_000), time.Minute+100*time.Millisecond)
}

func TestReportedUsage(t *testing.T) {
	for answer, want := range map[string][dimensions]int64{
		`{"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`:                                         {tokens: 15, inputTokens: 10, outputTokens: 5},
		`{"usage":{"input_tokens":10,"output_tokens":5,"total_tokens":15}}`:                                              {tokens: 15, inputTokens: 10, outputTokens: 5}, // Responses API
		`{"usage":{"input_tokens":10,"cache_creation_input_tokens":20,"cache_read_input_tokens":400,"output_tokens":5}}`: {tokens: 35, inputTokens: 30, outputTokens: 5},
		`{"usage":{"total_tokens":-7}}`:   {},
		`{"usage":{"total_tokens":1e30}}`: {tokens: maxPerMinute},
		`{"usageMetadata":{"promptTokenCount":10,"toolUsePromptTokenCount":2,"candidatesTokenCount":5,"thoughtsTokenCount":3,"totalTokenCount":20}}`: {tokens: 20, inputTokens: 12, outputTokens: 8}, // Gemini
		`{"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":1e30}}`:                                                                      {tokens: maxPerMinute, inputTokens: 10, outputTokens: maxPerMinute},
	} {
		var got [dimensions]int64
		if !reportedUsage([]byte(answer), &got) {
			t.Errorf("%s: no usage reported", answer)
		} else if got != want {
			t.Errorf("%s: %v, want %v", answer, got, want)
		}
	}
	for _, answer := range []string{`{"choices":[]}`, `not json`, `{"usage":7}`, `{"usageMetadata":[]}`} {
		var got [dimensions]int64
		if reportedUsage([]byte(answer), &got) {
			t.Errorf("%s: usage %v", answer, got)
		}
	}
}

// openAIHeaders are the rate-limit headers of an OpenAI answer.
func openAIHeaders(requests, remainingRequests, tokens, remainingTokens, reset string) []string {
	return []string{"x-ratelimit-limit-requests", requests, "x-ratelimit-remaining-requests", remainingRequests, "x-ratelimit-reset-requests", reset,
		"x-ratelimit-limit-tokens", tokens, "x-ratelimit-remaining-tokens", remainingTokens, "x-ratelimit-reset-tokens", reset}
}

// TestLimiterLearnsLimitsFromHeaders: the limits an answer states are adopted, the lower of a
// flag and a stated limit wins, and the limiter paces to them: with 60 requests a minute
// stated, a second call waits.
func TestLimiterLearnsLimitsFromHeaders(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 8, RPM: 100, TPM: 100_000, Clock: clock})
	answered(lim, acquireNow(t, lim, 10), openAIHeaders("60", "59", "200000", "199990", "1s")...)
	want := []InForce{{Name: "requests", Given: 100, Learnt: 60, Used: 1}, {Name: "tokens", Given: 100_000, Learnt: 200_000, Used: 10}}
	s := lim.Status()
	if !slices.Equal(s.Limits, want) {
		t.Fatalf("limits %+v, want %+v", s.Limits, want)
	}
	if got := s.Limits[0].PerMinute(); got != 60 {
		t.Errorf("%d requests a minute in force, want the stated 60 (below the flag's 100)", got)
	}
	if got := s.Limits[1].PerMinute(); got != 100_000 {
		t.Errorf("%d tokens a minute in force, want the flag's 100000 (below the stated 200000)", got)
	}
	if len(s.Warnings) != 0 {
		t.Errorf("warnings %q", s.Warnings)
	}
	if _, err := tryAcquire(lim, 10); err == nil { // the first took the second's worth
		t.Fatal("a second call went at once with 60 requests a minute")
	}

	anthropic := newTestLimiter(t, Limits{MaxInFlight: 8, Clock: clock})
	reset := clock.Now().Add(30 * time.Second).Format(time.RFC3339)
	answered(anthropic, acquireNow(t, anthropic, 10), "anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-remaining", "49",
		"anthropic-ratelimit-requests-reset", reset,
		"anthropic-ratelimit-input-tokens-limit", "30000", "anthropic-ratelimit-input-tokens-remaining", "29000", "anthropic-ratelimit-input-tokens-reset", reset,
		"anthropic-ratelimit-output-tokens-limit", "8000", "anthropic-ratelimit-output-tokens-remaining", "8000", "anthropic-ratelimit-output-tokens-reset", reset,
		"anthropic-ratelimit-tokens-limit", "8000", "anthropic-ratelimit-tokens-remaining", "8000", "anthropic-ratelimit-tokens-reset", reset)
	want = []InForce{{Name: "requests", Learnt: 50, Used: 1}, {Name: "input_tokens", Learnt: 30000, Used: 1000}, {Name: "output_tokens", Learnt: 8000}}
	if s := anthropic.Status(); fmt.Sprint(s.Limits) != fmt.Sprint(want) {
		t.Fatalf("limits %+v, want %+v (990 input tokens used unseen)", s.Limits, want)
	}
}

// TestLimiterSpendsWhatTheProviderSaysIsLeft: when the provider says more is left than the
// minute allows (a token bucket refilled meanwhile), the seventh call of TestLimiterSpreadsTheMinute
// goes at the pace, not when the first leaves the minute.
func TestLimiterSpendsWhatTheProviderSaysIsLeft(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 10, Clock: clock})
	bucket := []string{"x-ratelimit-limit-tokens", "6000", "x-ratelimit-remaining-tokens", "5000"}
	answered(lim, acquireNow(t, lim, 1000), bucket...)
	answered(lim, acquireNow(t, lim, 1000), bucket...) // the limit was unknown for the first
	pace := time.Minute*1000/6600 + 10*time.Millisecond
	for range 5 { // the fifth is the seventh in a minute
		p := make(chan Permit, 1)
		go func() {
			permit, _ := lim.Acquire(context.Background(), bytesOf(1000), nil)
			p <- permit
		}()
		eventually(t, "the call waits on the clock", func() bool { return clock.pending() == 1 })
		clock.Advance(pace)
		eventually(t, "the call goes at the pace", func() bool { return len(p) == 1 })
		answered(lim, <-p, bucket...)
	}
}

// TestLimiterChargesUsageItDoesNotSee: when the provider says less is left than the calls of
// this run account for (another run on the key), the difference is charged until the reset it
// states, here 30 s; stating no reset, a minute.
func TestLimiterChargesUsageItDoesNotSee(t *testing.T) {
	for reset, wait := range map[string]time.Duration{"30s": 30 * time.Second, "": time.Minute + 100*time.Millisecond} {
		clock := newFakeClock()
		lim := newTestLimiter(t, Limits{MaxInFlight: 10, Clock: clock})
		h := []string{"x-ratelimit-limit-tokens", "6000", "x-ratelimit-remaining-tokens", "0"}
		if reset != "" {
			h = append(h, "x-ratelimit-reset-tokens", reset)
		}
		answered(lim, acquireNow(t, lim, 1000), h...)
		if used := lim.Status().Limits[0].Used; used != 6000 {
			t.Fatalf("reset %q: %d used, want 6000", reset, used)
		}
		waitsFor(t, clock, acquireLater(context.Background(), lim, 1000), wait)
	}
}

// TestLimiterOddHeaders: headers that are missing, malformed, state a limit of 0, a reset in
// the past, or a limit that changes never stop a run: the limiter keeps what it knew (a
// changed limit is adopted) and warns once for each.
func TestLimiterOddHeaders(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 8, Clock: clock})
	past := clock.Now().Add(-time.Minute).Format(time.RFC3339)
	for _, h := range [][]string{
		{"x-ratelimit-limit-tokens", "1000"},
		{},                                     // missing, after stated
		{},                                     // again: no second warning
		{"x-ratelimit-limit-tokens", "lots"},   // malformed
		{"x-ratelimit-limit-tokens", "1e6"},    // not a whole number either: the same warning
		{"x-ratelimit-limit-tokens", "0"},      // some servers' "no limit"
		{"x-ratelimit-limit-tokens", "-1"},     // Azure's
		{"x-ratelimit-remaining-tokens", "-3"}, // malformed remaining, alone
		{"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-reset", past},
		{"anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-requests-reset", "soon"},
		{"x-ratelimit-limit-tokens", "2000"}, // changed
		{"x-ratelimit-limit-tokens", "1500"}, // changed again: adopted, no second warning
	} {
		clock.Advance(2 * time.Minute) // nothing left to wait for
		answered(lim, acquireNow(t, lim, 1), h...)
	}
	s := lim.Status()
	if want := []InForce{{Name: "requests", Learnt: 50, Used: 1}, {Name: "tokens", Learnt: 1500, Used: 1}}; fmt.Sprint(s.Limits) != fmt.Sprint(want) {
		t.Errorf("limits %+v, want %+v", s.Limits, want)
	}
	want := []string{
		"rate limits: an answer states no rate limits, where earlier ones did: the limits learnt before stay in force",
		`rate limits: x-ratelimit-limit-tokens "lots" is not a whole number 0 or more; ignored: the limits known before stay in force`,
		`rate limits: x-ratelimit-limit-tokens "0" states a limit of 0 or less; ignored: the limits known before stay in force`,
		`rate limits: x-ratelimit-remaining-tokens "-3" is not a whole number 0 or more; ignored: the limits known before stay in force`,
		`rate limits: anthropic-ratelimit-requests-reset "2025-12-31T23:59:00Z" is in the past; ignored: usage the provider counts and this run does not see is taken to last a minute`,
		`rate limits: anthropic-ratelimit-requests-reset "soon" is neither a time nor a duration; ignored: usage the provider counts and this run does not see is taken to last a minute`,
		"rate limits: the provider's tokens limit changed from 1000 to 2000 a minute: the new one is adopted",
	}
	if strings.Join(s.Warnings, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(s.Warnings, "\n"), strings.Join(want, "\n"))
	}
}

// TestReadStatements reads each provider's headers: OpenAI's resets as durations, Anthropic's
// as RFC 3339 times, Anthropic's tokens-* only when it states no input and output limits
// apart, and reports what cannot be used.
func TestReadStatements(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	none := statement{limit: -1, remaining: -1, reset: -1}
	for _, c := range []struct {
		name     string
		h        []string
		want     map[dimension]statement
		problems string
	}{
		{"openai", []string{"x-ratelimit-limit-requests", "60", "x-ratelimit-remaining-requests", "59", "x-ratelimit-reset-requests", "1.5s",
			"x-ratelimit-limit-tokens", "150000", "x-ratelimit-remaining-tokens", "149984", "x-ratelimit-reset-tokens", "6m0s"},
			map[dimension]statement{requests: {"x-ratelimit-limit-requests", 60, 59, 1500 * time.Millisecond},
				tokens: {"x-ratelimit-limit-tokens", 150000, 149984, time.Minute}}, ""},
		{"openai milliseconds", []string{"x-ratelimit-limit-tokens", "1000", "x-ratelimit-reset-tokens", "120ms"},
			map[dimension]statement{tokens: {"x-ratelimit-limit-tokens", 1000, -1, 120 * time.Millisecond}}, ""},
		{"anthropic", []string{"anthropic-ratelimit-input-tokens-limit", "40000", "anthropic-ratelimit-input-tokens-remaining", "39000",
			"anthropic-ratelimit-input-tokens-reset", "2026-01-01T12:00:03Z", "anthropic-ratelimit-output-tokens-limit", "8000",
			"anthropic-ratelimit-tokens-limit", "8000", "anthropic-ratelimit-tokens-remaining", "7000"},
			map[dimension]statement{inputTokens: {"anthropic-ratelimit-input-tokens-limit", 40000, 39000, 3 * time.Second},
				outputTokens: {"anthropic-ratelimit-output-tokens-limit", 8000, -1, -1}}, ""},
		{"anthropic tokens alone", []string{"anthropic-ratelimit-tokens-limit", "80000", "anthropic-ratelimit-tokens-remaining", "79000",
			"anthropic-ratelimit-tokens-reset", "2026-01-01T11:59:59Z"}, // a second in the past: to the second, it is now
			map[dimension]statement{tokens: {"anthropic-ratelimit-tokens-limit", 80000, 79000, 0}}, ""},
		{"remaining alone, seconds", []string{"x-ratelimit-remaining-tokens", "500", "x-ratelimit-reset-tokens", "2"},
			map[dimension]statement{tokens: {"x-ratelimit-remaining-tokens", -1, 500, 2 * time.Second}}, ""},
		{"huge", []string{"x-ratelimit-limit-tokens", "99999999999999999999", "x-ratelimit-remaining-tokens", "99999999999999999999"},
			map[dimension]statement{tokens: {"x-ratelimit-limit-tokens", maxPerMinute, maxPerMinute, -1}}, ""},
		{"bad", []string{"x-ratelimit-limit-tokens", "12.5", "x-ratelimit-remaining-tokens", "-1", "x-ratelimit-reset-tokens", "NaN",
			"x-ratelimit-limit-requests", "0", "x-ratelimit-reset-requests", "-3s"},
			map[dimension]statement{tokens: {"x-ratelimit-limit-tokens", -1, -1, -1}, requests: {"x-ratelimit-limit-requests", -1, -1, -1}},
			"x-ratelimit-limit-requests 0 1, x-ratelimit-reset-requests -3s 3, x-ratelimit-limit-tokens 12.5 0, x-ratelimit-remaining-tokens -1 0, x-ratelimit-reset-tokens NaN 2"},
		{"none", nil, nil, ""},
	} {
		h := http.Header{}
		for i := 0; i+1 < len(c.h); i += 2 {
			h.Set(c.h[i], c.h[i+1])
		}
		st, problems := readStatements(h, now)
		for d := range dimensions {
			want, ok := c.want[d]
			if !ok {
				want = none
			}
			if st[d] != want {
				t.Errorf("%s: %s %+v, want %+v", c.name, d, st[d], want)
			}
		}
		var got []string
		for _, p := range problems {
			got = append(got, fmt.Sprintf("%s %s %d", p.header, p.value, p.kind))
		}
		if strings.Join(got, ", ") != c.problems {
			t.Errorf("%s: problems %q, want %q", c.name, strings.Join(got, ", "), c.problems)
		}
	}
}

// TestLimiterCountsAnswers429sAndWaits: the status counts the answers, the 429s among them,
// the calls waiting and the time they waited.
func TestLimiterCountsAnswers429sAndWaits(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 1, Clock: clock})
	held := acquireNow(t, lim, 1)
	done := acquireLater(context.Background(), lim, 1)
	eventually(t, "a call waits", func() bool { return lim.Status().Waiting == 1 })
	clock.Advance(5 * time.Second)
	lim.Release(held, http.Header{}, nil, statusError(http.StatusTooManyRequests))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	lim.Release(Permit{}, nil, nil, errors.New("connection reset")) // no answer: not counted
	s := lim.Status()
	for _, c := range []struct {
		what      string
		got, want any
	}{{"calls", s.Calls, int64(1)}, {"rate limited", s.RateLimited, int64(1)}, {"seconds waited", s.WaitedSeconds, 5.0}, {"waiting", s.Waiting, 0}} {
		if c.got != c.want {
			t.Errorf("%s %v, want %v", c.what, c.got, c.want)
		}
	}
}

// statusError is a provider's error answer of a status, as Release reads it.
type statusError int

func (e statusError) Error() string   { return fmt.Sprintf("HTTP %d", int(e)) }
func (e statusError) HTTPStatus() int { return int(e) }

// TestLimiterBacksOffOn429: a 429 and then a 529 halve the allowance twice (4, 2, 1);
// successes then raise it one at a time back to 4, after as many in a row as the allowance,
// each change returned as a Throttle.
func TestLimiterBacksOffOn429(t *testing.T) {
	lim := newTestLimiter(t, Limits{MaxInFlight: 4})
	outcomes := []error{statusError(http.StatusTooManyRequests), statusError(529)}
	for range 7 {
		outcomes = append(outcomes, nil)
	}
	var allowed []int
	var throttles []string
	for _, err := range outcomes {
		if th, changed := lim.Release(acquireNow(t, lim, 1), http.Header{}, []byte(`{}`), err); changed {
			throttles = append(throttles, fmt.Sprintf("%d:%d", th.Status, th.MaxInFlight))
		}
		a, _, _ := lim.state()
		allowed = append(allowed, a)
	}
	// 1 success at 1 -> 2; then 2 successes at 2 -> 3, 3 at 3 -> 4.
	if got, want := fmt.Sprint(allowed), "[2 1 2 2 3 3 3 4 4]"; got != want {
		t.Errorf("allowance after each answer %s, want %s", got, want)
	}
	if got, want := strings.Join(throttles, " "), "429:2 529:1 200:2 200:3 200:4"; got != want {
		t.Errorf("throttles %q, want %q", got, want)
	}
}

// TestLimiterHalvesOncePerCongestion: calls let through together that all get a 429 halve
// the allowance once, not once each; other failures leave it alone.
func TestLimiterHalvesOncePerCongestion(t *testing.T) {
	lim := newTestLimiter(t, Limits{MaxInFlight: 8})
	answered(lim, acquireNow(t, lim, 1))
	var permits []Permit
	for range 4 {
		permits = append(permits, acquireNow(t, lim, 1))
	}
	rateLimited := statusError(http.StatusTooManyRequests)
	var changes int
	for _, p := range permits {
		if e, changed := lim.Release(p, nil, nil, rateLimited); changed {
			changes++
			if e != (Throttle{Status: 429, MaxInFlight: 4}) {
				t.Errorf("throttle %+v", e)
			}
		}
	}
	for _, err := range []error{statusError(500), errors.New("connection reset"), context.Canceled} {
		if _, changed := lim.Release(acquireNow(t, lim, 1), nil, nil, err); changed {
			t.Errorf("%v changed the allowance", err)
		}
	}
	if changes != 1 {
		t.Errorf("the allowance changed %d times, want once", changes)
	}
	if allowed, held, _ := lim.state(); allowed != 4 {
		t.Errorf("allowance %d, want 4", allowed)
	} else if held != 0 {
		t.Errorf("%d permits held after every one was released", held)
	}
}

// TestLimiterCancelWhileWaiting: a caller cancelled while waiting for a slot or for the pace
// gets ctx.Err() and takes nothing: the slot and the request stay for the next one.
func TestLimiterCancelWhileWaiting(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 1, RPM: 60, Clock: clock})
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
	answered(lim, first) // the first took the second's worth of 60 requests a minute

	ctx, cancel = context.WithCancel(context.Background())
	forPace := acquireLater(ctx, lim, 1)
	eventually(t, "a caller waits on the clock", func() bool { return clock.pending() == 1 })
	cancel()
	if err := <-forPace; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled while waiting for the pace: %v", err)
	}
	clock.Advance(time.Second) // one request's worth: the cancelled caller took none
	answered(lim, acquireNow(t, lim, 1))
	if _, held, queued := lim.state(); held != 0 || queued != 0 {
		t.Fatalf("at the end: %d held, %d queued", held, queued)
	}
}

// BenchmarkLimiter measures Acquire and Release with nothing to wait for (uncontended), with
// as many goroutines as cores sharing a limiter that lets all of them through (parallel),
// and sharing a single slot, so that each call waits for another's release (handoff). The
// answer's usage is a token a call, so that even the fastest loop stays below the limits
// (1e10 tokens a minute: 170 million a second) and is never paced.
func BenchmarkLimiter(b *testing.B) {
	ctx := context.Background()
	answer := []byte(`{"usage":{"prompt_tokens":1,"completion_tokens":0,"total_tokens":1}}`)
	b.Run("uncontended", func(b *testing.B) {
		lim := newTestLimiter(b, Limits{MaxInFlight: 4, RPM: maxPerMinute, TPM: maxPerMinute})
		b.ReportAllocs()
		for b.Loop() {
			p, err := lim.Acquire(ctx, 4, nil)
			if err != nil {
				b.Fatal(err)
			}
			lim.Release(p, nil, answer, nil)
		}
	})
	for name, inFlight := range map[string]int{"parallel": 64, "handoff": 1} {
		b.Run(name, func(b *testing.B) {
			lim := newTestLimiter(b, Limits{MaxInFlight: inFlight, RPM: maxPerMinute, TPM: maxPerMinute})
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					p, err := lim.Acquire(ctx, 4, nil)
					if err != nil {
						b.Error(err)
						return
					}
					lim.Release(p, nil, answer, nil)
				}
			})
		})
	}
}

// holds collects what a call waiting for the limiter is told, and how long it was held.
type holds struct {
	mu   sync.Mutex
	list []string
}

func (h *holds) told(hold Hold) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.list = append(h.list, fmt.Sprintf("queued %v %s", hold.Wait, hold.Reason))
}

// acquire is Acquire whose holds and wait h keeps.
func (h *holds) acquire(ctx context.Context, l *Limiter, tokens int64) (Permit, error) {
	p, err := l.Acquire(ctx, bytesOf(tokens), h.told)
	if waited, held := p.Held(); held {
		h.mu.Lock()
		h.list = append(h.list, fmt.Sprintf("paced %v", waited))
		h.mu.Unlock()
	}
	return p, err
}

// acquireLater is acquireLater with h keeping the holds and wait.
func (h *holds) acquireLater(l *Limiter, tokens int64) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := h.acquire(context.Background(), l, tokens)
		done <- err
	}()
	return done
}

func (h *holds) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.list, "\n")
}

// TestLimiterTellsWhyACallWaits: a call held by the limiter is told why, once per reason (the
// first answer awaited, its turn in the queue, a slot, a quota with the time it needs), and
// its permit says how long it waited; a call that does not wait is told nothing.
func TestLimiterTellsWhyACallWaits(t *testing.T) {
	clock := newFakeClock()
	lim := newTestLimiter(t, Limits{MaxInFlight: 2, Clock: clock})
	var quiet, second, third, fourth holds
	p, err := quiet.acquire(context.Background(), lim, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if quiet.String() != "" {
		t.Fatalf("a call that did not wait was told\n%s", quiet.String())
	}
	secondDone := second.acquireLater(lim, 1)
	eventually(t, "the second call queued", func() bool { _, _, q := lim.state(); return q == 1 })
	thirdDone := third.acquireLater(lim, 1)
	eventually(t, "the third call queued", func() bool { _, _, q := lim.state(); return q == 2 })
	clock.Advance(3 * time.Second)
	answered(lim, p)
	for _, done := range []<-chan error{secondDone, thirdDone} {
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	if got, want := second.String(), "queued 0s the first call goes alone until an answer states the provider's limits\npaced 3s"; got != want {
		t.Errorf("the second call was told\n%s\nwant\n%s", got, want)
	}
	if got, want := third.String(), "queued 0s its turn in the rate limiter's queue, 1 ahead\npaced 3s"; got != want {
		t.Errorf("the third call was told\n%s\nwant\n%s", got, want)
	}
	fourthDone := fourth.acquireLater(lim, 1)
	eventually(t, "the fourth call queued", func() bool { _, _, q := lim.state(); return q == 1 })
	clock.Advance(time.Second)
	lim.Release(Permit{}, nil, nil, errors.New("connection reset")) // the second call's
	if err := <-fourthDone; err != nil {
		t.Fatal(err)
	}
	if got, want := fourth.String(), "queued 0s a free slot: the calls allowed at once (2) are in flight\npaced 1s"; got != want {
		t.Errorf("the fourth call was told\n%s\nwant\n%s", got, want)
	}

	lim = newTestLimiter(t, Limits{MaxInFlight: 10, TPM: 6000, Clock: clock})
	answered(lim, acquireNow(t, lim, 1000))
	var paced holds
	pace := time.Minute*1000/6600 + 10*time.Millisecond // as in TestLimiterSpreadsTheMinute
	waitsFor(t, clock, paced.acquireLater(lim, 1000), pace)
	if got, want := paced.String(), fmt.Sprintf("queued 9.09091s the tokens limit, 6000 a minute\npaced %v", pace); got != want {
		t.Errorf("a call paced by a quota was told\n%s\nwant\n%s", got, want)
	}
}
