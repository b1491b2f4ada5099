package provider

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

var pacingBench = flag.Bool("pacing", false, "run the pacing benchmark: go test ./harness/models/provider -run TestPacingBenchmark -v -pacing")

// limitName is one of the limits a minute the fake provider enforces, named as in its headers.
type limitName int

const (
	requests limitName = iota
	tokens
	inputTokens
	outputTokens
	limitNames
)

func (d limitName) String() string {
	return [limitNames]string{"requests", "tokens", "input_tokens", "output_tokens"}[d]
}

// enforcer is how the fake provider enforces one limit of N a minute.
type enforcer interface {
	room(now time.Time) int64 // what may still be sent now
	charge(now time.Time, n int64)
	reset(now time.Time) time.Duration // until the limit is whole again
}

// tokenBucket holds N and is refilled at N a minute, continuously (Anthropic's algorithm).
type tokenBucket struct {
	limit float64
	level float64
	last  time.Time
}

func (b *tokenBucket) refill(now time.Time) {
	b.level = min(b.limit, b.level+b.limit*now.Sub(b.last).Minutes())
	b.last = now
}
func (b *tokenBucket) room(now time.Time) int64 { b.refill(now); return int64(b.level) }
func (b *tokenBucket) charge(now time.Time, n int64) {
	b.refill(now)
	b.level -= float64(n)
}
func (b *tokenBucket) reset(now time.Time) time.Duration {
	b.refill(now)
	return time.Duration((b.limit - b.level) / b.limit * float64(time.Minute))
}

// slidingWindow accepts N in any 60 s.
type slidingWindow struct {
	limit int64
	sent  []sentAt
	sum   int64
}

type sentAt struct {
	t time.Time
	n int64
}

func (w *slidingWindow) expire(now time.Time) {
	for len(w.sent) > 0 && now.Sub(w.sent[0].t) >= time.Minute {
		w.sum -= w.sent[0].n
		w.sent = w.sent[1:]
	}
}
func (w *slidingWindow) room(now time.Time) int64 { w.expire(now); return w.limit - w.sum }
func (w *slidingWindow) charge(now time.Time, n int64) {
	w.expire(now)
	w.sent = append(w.sent, sentAt{now, n})
	w.sum += n
}
func (w *slidingWindow) reset(now time.Time) time.Duration {
	w.expire(now)
	if len(w.sent) == 0 {
		return 0
	}
	return w.sent[len(w.sent)-1].t.Add(time.Minute).Sub(now)
}

// fakeProvider is a provider behind an http.RoundTripper (so that it lives in the synctest
// bubble). It enforces its limits one way, answers 429 beyond them with a retry-after
// (counting nothing for the refused call), and states them in one provider's headers, as a
// gateway does: as they stand when the call arrives. A call's input is its body's bytes / 4.5
// (the limiter's first guess, / 4, errs high), its output 100 to 1100 tokens; it answers in
// half a second plus 5 ms an output token (1 to 6 s: a fast model).
type fakeProvider struct {
	dialect   string // openai or anthropic
	noHeaders bool   // states no limits (a proxy that drops them)
	limits    [limitNames]int64
	until     time.Time // the end of the measured period

	mu       sync.Mutex
	rng      *rand.Rand
	enforce  [limitNames]enforcer
	accepted [limitNames]int64 // in the measured period
	answers  int               // in the measured period
	refused  int               // of them, 429s
}

func newFakeProvider(dialect, kind string, limits [limitNames]int64, until time.Time, seed uint64) *fakeProvider {
	f := &fakeProvider{dialect: dialect, limits: limits, until: until, rng: rand.New(rand.NewPCG(seed, 1))}
	for d, n := range limits {
		if n == 0 {
			continue
		}
		if kind == "bucket" {
			f.enforce[d] = &tokenBucket{limit: float64(n), level: float64(n), last: time.Now()}
		} else {
			f.enforce[d] = &slidingWindow{limit: n}
		}
	}
	return f
}

func (f *fakeProvider) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	f.mu.Lock()
	in := int64(float64(len(body)) / 4.5)
	out := 100 + f.rng.Int64N(1000)
	charge := [limitNames]int64{requests: 1, tokens: in + out, inputTokens: in, outputTokens: out}
	var wait time.Duration
	for d, e := range f.enforce {
		if e != nil && e.room(now) < charge[d] {
			wait = max(wait, time.Duration(float64(charge[d]-e.room(now))/float64(f.limits[d])*float64(time.Minute)))
		}
	}
	measured := now.Before(f.until)
	if measured {
		f.answers++
	}
	if wait > 0 {
		if measured {
			f.refused++
		}
		h := f.headers(now)
		f.mu.Unlock()
		h.Set("retry-after", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
		return fakeAnswer(req, http.StatusTooManyRequests, h, `{"error":{"type":"rate_limit_error","message":"rate limited"}}`), nil
	}
	for d, e := range f.enforce {
		if e != nil {
			e.charge(now, charge[d])
		}
		if measured {
			f.accepted[d] += charge[d]
		}
	}
	h := f.headers(now)
	f.mu.Unlock()
	time.Sleep(500*time.Millisecond + time.Duration(out)*5*time.Millisecond)
	if f.dialect == "anthropic" {
		return fakeAnswer(req, http.StatusOK, h, fmt.Sprintf(`{"type":"message","content":[{"type":"tool_use","id":"t","name":"code_exec","input":{"cmd":"ls"}}],`+
			`"usage":{"input_tokens":%d,"output_tokens":%d}}`, in, out)), nil
	}
	return fakeAnswer(req, http.StatusOK, h, fmt.Sprintf(`{"choices":[{"message":{"role":"assistant","tool_calls":[{"id":"t","type":"function",`+
		`"function":{"name":"code_exec","arguments":"{}"}}]}}],"usage":{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}}`, in, out, in+out)), nil
}

// headers states the limits as the dialect does: OpenAI's resets as durations, Anthropic's
// as RFC 3339 times (to the second, rounded up), its tokens-* as the most restrictive of
// input and output. f.mu is held.
func (f *fakeProvider) headers(now time.Time) http.Header {
	h := http.Header{}
	if f.noHeaders || f.enforce[requests] == nil {
		return h
	}
	state := func(d limitName) (limit, remaining int64, reset time.Duration) {
		e := f.enforce[d]
		return f.limits[d], max(e.room(now), 0), e.reset(now)
	}
	if f.dialect == "openai" {
		for _, d := range []limitName{requests, tokens} {
			limit, remaining, reset := state(d)
			h.Set("x-ratelimit-limit-"+d.String(), strconv.FormatInt(limit, 10))
			h.Set("x-ratelimit-remaining-"+d.String(), strconv.FormatInt(remaining, 10))
			h.Set("x-ratelimit-reset-"+d.String(), reset.Round(time.Millisecond).String())
		}
		return h
	}
	tightest, tightestShare := inputTokens, 2.0
	for _, d := range []limitName{requests, inputTokens, outputTokens} {
		limit, remaining, reset := state(d)
		name := "anthropic-ratelimit-" + strings.ReplaceAll(d.String(), "_", "-")
		h.Set(name+"-limit", strconv.FormatInt(limit, 10))
		h.Set(name+"-remaining", strconv.FormatInt(remaining, 10))
		h.Set(name+"-reset", now.Add(reset+time.Second-1).Truncate(time.Second).Format(time.RFC3339))
		if share := float64(remaining) / float64(limit); d != requests && share < tightestShare {
			tightest, tightestShare = d, share
		}
	}
	for _, part := range []string{"limit", "remaining", "reset"} {
		h.Set("anthropic-ratelimit-tokens-"+part, h.Get("anthropic-ratelimit-"+strings.ReplaceAll(tightest.String(), "_", "-")+"-"+part))
	}
	return h
}

// fakeAnswer is the fake provider's answer to req: a JSON body with its status and headers.
func fakeAnswer(req *http.Request, status int, h http.Header, body string) *http.Response {
	h.Set("Content-Type", "application/json")
	return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: req, ContentLength: int64(len(body))}
}

// pacingCase is one run of the benchmark.
type pacingCase struct {
	dialect, kind string
	flags         bool // --rpm and --tpm given, as the provider's limits
	noHeaders     bool
	unlimited     bool // the provider enforces and states nothing: what the episodes would send
	parallel      int
	minutes       int // measured
}

// pacingResult is what the provider accepted and refused in the measured period.
type pacingResult struct {
	use, refused float64
	answers      int
	errs         int
}

// runPacing plays c in a synctest bubble: parallel episodes of up to 30 turns, each sending
// a conversation that starts at 8 kB and grows by 1 to 5 kB a turn, and running a 0.2 to 2 s
// command between calls, through a provider of this package with one limiter shared as a
// run shares it. The provider's limits are 500 requests and 200,000 tokens a minute
// (OpenAI's headers), or 500 requests, 200,000 input and 40,000 output tokens (Anthropic's);
// the flags given are --rpm 500 and --tpm 200000, or for Anthropic --tpm 240000, since --tpm
// counts input and output together.
func runPacing(t *testing.T, c pacingCase) pacingResult {
	var res pacingResult
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		limits := [limitNames]int64{requests: 500, tokens: 200_000}
		flagTPM := int64(200_000)
		if c.dialect == "anthropic" {
			limits = [limitNames]int64{requests: 500, inputTokens: 200_000, outputTokens: 40_000}
			flagTPM = 240_000
		}
		enforced := limits
		if c.unlimited {
			enforced = [limitNames]int64{}
		}
		f := newFakeProvider(c.dialect, c.kind, enforced, start.Add(time.Duration(c.minutes)*time.Minute), uint64(c.parallel))
		f.noHeaders = c.noHeaders
		l := ratelimit.Limits{MaxInFlight: c.parallel}
		if c.flags {
			l.RPM, l.TPM = 500, flagTPM
		}
		lim := newTestLimiter(t, l)
		opts := Options{Model: "m", BaseURL: "http://fake", APIKey: "k", HTTP: &http.Client{Transport: f},
			Retry: DefaultRetry, Budget: time.Hour, Limit: lim}
		var m model.Model = &OpenAIChat{opts}
		if c.dialect == "anthropic" {
			m = &Anthropic{Options: opts}
		}
		ctx, cancel := context.WithDeadline(context.Background(), f.until)
		defer cancel()
		var wg sync.WaitGroup
		var mu sync.Mutex
		for e := range c.parallel {
			wg.Go(func() {
				rng := rand.New(rand.NewPCG(uint64(e), 2))
				for ctx.Err() == nil {
					req := model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: strings.Repeat("s", 8000)},
						{Role: model.RoleUser, Content: "task"}}}
					for turn := range 30 {
						if _, err := m.Complete(ctx, req); err != nil {
							if ctx.Err() == nil {
								mu.Lock()
								res.errs++
								mu.Unlock()
							}
							return
						}
						id := "call_" + strconv.Itoa(turn)
						req.Messages = append(req.Messages,
							model.Message{Role: model.RoleAssistant,
								ToolCalls: []model.ToolCall{{ID: id, Name: "code_exec", Arguments: "{}"}}},
							model.Message{Role: model.RoleTool, ToolCallID: id, Content: strings.Repeat("x", 1000+rng.IntN(4000))})
						if backoff.Sleep(ctx, 200*time.Millisecond+time.Duration(rng.Int64N(int64(1800*time.Millisecond)))) != nil {
							return
						}
					}
				}
			})
		}
		wg.Wait()
		binding := tokens
		if c.dialect == "anthropic" {
			binding = inputTokens
		}
		most := float64(limits[binding]) * float64(1+c.minutes) // a full minute's burst plus the refill
		if c.unlimited {
			most = float64(limits[binding]) * float64(c.minutes) // the limit's rate
		}
		res.use = float64(f.accepted[binding]) / most
		res.answers = f.answers
		res.refused = float64(f.refused) / float64(max(f.answers, 1))
	})
	return res
}

// TestPacingBenchmark measures, for each way of enforcing (a token bucket, a 60 s window), each
// provider's headers, with and without --rpm and --tpm, at --parallel 4, 16 and 64, the use of
// the limit (the tokens accepted over the most the provider could accept in the measured
// hour: a full minute's burst plus the refill) and the share of calls answered 429; and, for
// scale, what the episodes would send with no limit at all. Time is synctest's: an hour of
// calls takes seconds, and no figure depends on the machine. It runs with -pacing only;
// without, it plays one short case and checks only that every call ended well.
func TestPacingBenchmark(t *testing.T) {
	if !*pacingBench {
		if r := runPacing(t, pacingCase{dialect: "anthropic", kind: "window", parallel: 4, minutes: 3}); r.errs > 0 || r.answers == 0 {
			t.Fatalf("%d answers, %d episodes failed", r.answers, r.errs)
		}
		return
	}
	const minutes = 60
	var table bytes.Buffer
	fmt.Fprintf(&table, "%d minutes measured; use = accepted / (limit x %d minutes + a minute's burst)\n", minutes, minutes)
	fmt.Fprintf(&table, "%-9s %-7s %-22s %8s %7s %7s %6s\n", "headers", "enforce", "flags", "parallel", "use", "429s", "calls")
	for _, dialect := range []string{"openai", "anthropic"} {
		for _, p := range []int{4, 16, 64} {
			r := runPacing(t, pacingCase{dialect: dialect, unlimited: true, parallel: p, minutes: minutes})
			fmt.Fprintf(&table, "%-9s unpaced, no limit: the episodes send %.1fx the limit at --parallel %d\n", dialect, r.use, p)
		}
		for _, kind := range []string{"bucket", "window"} {
			for _, fl := range []struct {
				name             string
				flags, noHeaders bool
			}{{"none", false, false}, {"--rpm --tpm", true, false}, {"--rpm --tpm, no headers", true, true}} {
				if fl.noHeaders && dialect == "anthropic" {
					continue // --tpm cannot say Anthropic's input limit
				}
				for _, p := range []int{4, 16, 64} {
					r := runPacing(t, pacingCase{dialect: dialect, kind: kind, flags: fl.flags, noHeaders: fl.noHeaders, parallel: p, minutes: minutes})
					fmt.Fprintf(&table, "%-9s %-7s %-22s %8d %6.1f%% %6.2f%% %6d\n", dialect, kind, fl.name, p, 100*r.use, 100*r.refused, r.answers)
					if r.errs > 0 {
						fmt.Fprintf(&table, "  %d episodes failed\n", r.errs)
					}
				}
			}
		}
	}
	t.Log("\n" + table.String())
}
