// Package ratelimit paces the calls a run makes to one model provider: one Limiter, shared
// by every episode, learns the provider's limits from its answers and holds each call until
// it may go, so that parallel episodes share the quota instead of each meeting its own 429s.
// It knows HTTP headers and the usage of JSON answers, not the providers' requests.
package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"
)

// Limits are the rate limits of one provider, shared by every episode of a run.
type Limits struct {
	// MaxInFlight is the most calls waiting for an answer at once (1 or more). 429s and
	// overload answers lower the allowance below it for a while (AIMD, see Limiter).
	MaxInFlight int
	RPM         int   // requests per minute; 0: none given (the provider's answers may state one)
	TPM         int64 // tokens per minute, input and output; 0: none given
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
// its quota instead of each retrying its own 429s. It learns the provider's limits from the
// rate-limit headers of its answers (the lower of a flag and a stated limit wins) and paces
// before calls (see quota): requests, tokens, and Anthropic's input and output tokens apart.
// The first call goes alone, so that its answer states the limits before the others go. The
// 429 is the last line: AIMD adaptation of the calls allowed in flight (halved on each 429 or
// overload answer, raised by one after as many successes in a row as the allowance, as TCP
// grows its window), and the caller's retry. Callers are served first come, first served, so
// a large request is not starved by small ones. Headers it cannot use never stop a run: it
// keeps what it knew and says so once (Status().Warnings). A nil *Limiter limits nothing.
type Limiter struct {
	clock   Clock
	ceiling int // Limits.MaxInFlight

	mu        sync.Mutex
	allowed   int       // calls allowed in flight now, 1..ceiling
	inFlight  int       // calls holding a permit
	successes int       // successes since allowed last changed
	epoch     uint64    // how many times allowed was halved
	queue     []*waiter // callers waiting, in order of arrival
	quotas    [dimensions]quota
	answered  bool    // an answer came: calls no longer go one at a time
	stated    bool    // an answer stated limits
	perByte   float64 // input tokens an answer reports per byte of its request, on average
	// output tokens of the recent answers at most: charged before a call, whose output is unknown
	output   int64
	calls    int64           // answers received
	limited  int64           // of them, 429s
	waited   time.Duration   // by callers in the queue, summed
	warned   map[string]bool // the warnings given, by key
	warnings []string
}

// waiter is a caller in the queue; only the head may take a permit, the others wait to be
// woken when they become the head.
type waiter struct{ wake chan struct{} }

// Permit is one call's hold on the limiter, handed back with Release.
type Permit struct {
	bytes   int               // the request's
	charged [dimensions]int64 // before the call
	slot    int64             // the quotas' slot when the call was let through
	epoch   uint64            // the limiter's epoch when the call was let through
	queued  bool              // the call waited in the queue
	waited  time.Duration     // for so long
}

// Held says how long the call waited for the limiter, and whether it waited in its queue at
// all (a call that went at once did not).
func (p Permit) Held() (time.Duration, bool) { return p.waited, p.queued }

// New checks the limits and returns a limiter with nothing spent.
func New(l Limits) (*Limiter, error) {
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
	lim := &Limiter{clock: clock, ceiling: l.MaxInFlight, allowed: l.MaxInFlight, perByte: initialPerByte,
		warned: map[string]bool{}}
	for d := range dimensions {
		lim.quotas[d] = newQuota(0, now)
	}
	lim.quotas[requests] = newQuota(int64(l.RPM), now)
	lim.quotas[tokens] = newQuota(l.TPM, now)
	return lim, nil
}

// Hold is why a call waits for the limiter, as Acquire tells it: a run's display shows the
// episodes held by the limits, and the trajectory keeps it.
type Hold struct {
	Reason string        // what the call waits for, in words
	Wait   time.Duration // how long, when the limiter knows; 0 otherwise
}

// Acquire waits until a call whose request body is bytes long may go: its turn in the queue,
// a free in-flight slot, and room in every quota. It returns ctx.Err() when ctx ends first,
// leaving the quotas and slots as they were; when ctx is already done it still succeeds if
// nothing needs waiting for. A call that waits tells held (when not nil) why, each time the
// reason changes; the permit says how long it waited (Permit.Held).
func (l *Limiter) Acquire(ctx context.Context, bytes int, held func(Hold)) (Permit, error) {
	if l == nil {
		return Permit{}, nil
	}
	l.mu.Lock()
	h := hold{ahead: len(l.queue)}
	if h.ahead == 0 {
		var p Permit
		var ok bool
		if p, h, ok = l.admit(bytes); ok {
			l.mu.Unlock()
			return p, nil
		}
	}
	queued := l.clock.Now()
	w := &waiter{wake: make(chan struct{}, 1)}
	l.queue = append(l.queue, w)
	told := ""
	for {
		var timer <-chan time.Time
		if l.queue[0] == w {
			var p Permit
			var ok bool
			if p, h, ok = l.admit(bytes); ok {
				l.leave(w, queued)
				p.queued, p.waited = true, l.clock.Now().Sub(queued)
				l.mu.Unlock()
				return p, nil
			}
			if h.wait > 0 {
				timer = l.clock.After(h.wait)
			}
		}
		why := l.why(h)
		l.mu.Unlock()
		if held != nil && why != told {
			told = why
			held(Hold{Reason: why, Wait: h.wait})
		}
		select {
		case <-ctx.Done():
			l.mu.Lock()
			l.leave(w, queued)
			l.mu.Unlock()
			return Permit{}, ctx.Err()
		case <-w.wake:
		case <-timer:
		}
		l.mu.Lock()
	}
}

// Throttle is a change of the calls the limiter allows in flight at once (MaxInFlight), on
// an answer of Status: halved on an overload, raised by one after successes.
type Throttle struct {
	Status      int
	MaxInFlight int
}

// StatusError is an error answer of a provider, as Release weighs it: its HTTP status (the
// APIError of harness/models/provider).
type StatusError interface {
	error
	HTTPStatus() int
}

// Release hands a permit back once the call has its answer (or its error): header is the
// answer's header, nil when no answer came; callErr a StatusError when the provider answered
// with an error. It corrects the quotas with the usage the answer reports, learns the limits
// its headers state, and adapts the in-flight allowance. When the allowance changed it
// returns the change.
func (l *Limiter) Release(p Permit, header http.Header, answer []byte, callErr error) (Throttle, bool) {
	if l == nil {
		return Throttle{}, false
	}
	now := l.clock.Now()
	var used [dimensions]int64
	reported := callErr == nil && reportedUsage(answer, &used)
	var st [dimensions]statement
	var problems []statementProblem
	if header != nil {
		st, problems = readStatements(header, now)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.inFlight--
	l.answered = l.answered || header != nil || callErr == nil
	for d := range dimensions {
		l.quotas[d].advance(now)
	}
	own := p.charged // what the call counts for, as far as is known
	if reported {
		used[requests] = 1
		l.correct(p, used)
		own = used
	}
	if header != nil {
		l.calls++
		l.learn(st, problems, p.slot, own, now)
	}
	defer l.wakeHead()
	status, overload := overloaded(callErr)
	switch {
	case overload:
		if status == http.StatusTooManyRequests {
			l.limited++
		}
		// Calls let through before the last halving saw the old allowance: their 429s are
		// the same congestion and must not halve it again.
		if p.epoch != l.epoch {
			return Throttle{}, false
		}
		l.successes = 0
		if l.allowed == 1 {
			return Throttle{}, false
		}
		l.allowed /= 2
		l.epoch++
		return Throttle{Status: status, MaxInFlight: l.allowed}, true
	case callErr == nil:
		if l.allowed == l.ceiling {
			return Throttle{}, false
		}
		if l.successes++; l.successes < l.allowed {
			return Throttle{}, false
		}
		l.allowed++
		l.successes = 0
		return Throttle{Status: http.StatusOK, MaxInFlight: l.allowed}, true
	}
	return Throttle{}, false // other failures say nothing about the provider's load
}

// correct charges the quotas what a call used, as its answer reports, instead of what it was
// charged before, and learns from it what to charge the next calls. l.mu is held.
func (l *Limiter) correct(p Permit, used [dimensions]int64) {
	for d := tokens; d < dimensions; d++ {
		l.quotas[d].correct(p.slot, used[d]-p.charged[d])
	}
	// An output is unknown until the answer and varies widely: it is charged at the upper
	// envelope of the recent ones (up at once, down slowly), so that calls in flight do not
	// overrun a full minute. Input follows from the request: the mean ratio is enough.
	if o := min(used[outputTokens], maxOutput); o >= l.output {
		l.output = o
	} else {
		l.output -= (l.output - o) / 16
	}
	if p.bytes > 0 {
		l.perByte += (min(max(float64(used[inputTokens])/float64(p.bytes), minPerByte), maxPerByte) - l.perByte) / 8
	}
}

// learn adopts the limits stated by the answer to a call sent in slot sent that counts for
// own, at now: a stated limit replaces the one stated before, and what it says is left is
// reconciled with the quota. What it cannot use leaves what was known, with a warning, once.
// l.mu is held.
func (l *Limiter) learn(
	st [dimensions]statement,
	problems []statementProblem,
	sent int64,
	own [dimensions]int64,
	now time.Time,
) {
	for _, pr := range problems {
		l.warnProblem(pr)
	}
	statesSome := false
	for d := range dimensions {
		s := st[d]
		if !s.stated() {
			continue
		}
		statesSome = true
		q := &l.quotas[d]
		if s.limit > 0 && s.limit != q.learnt {
			if q.learnt != 0 {
				l.warn("changed:"+d.String(),
					fmt.Sprintf("the provider's %s limit changed from %d to %d a minute: the new one is adopted",
						d.String(), q.learnt, s.limit))
			}
			q.learn(s.limit, now)
		}
		q.reconcile(now, sent, own[d], s.remaining, s.reset)
	}
	if statesSome {
		l.stated = true
	} else if l.stated {
		l.warn("missing", "an answer states no rate limits, where earlier ones did: the limits learnt before stay in force")
	}
}

// warnProblem words a header that could not be used, saying what the limiter keeps.
func (l *Limiter) warnProblem(pr statementProblem) {
	var what string
	switch pr.kind {
	case notANumber:
		what = "is not a whole number 0 or more"
	case zeroLimit:
		what = "states a limit of 0 or less"
	case badReset:
		what = "is neither a time nor a duration"
	case pastReset:
		what = "is in the past"
	}
	kept := "ignored: the limits known before stay in force"
	if pr.kind == badReset || pr.kind == pastReset {
		kept = "ignored: usage the provider counts and this run does not see is taken to last a minute"
	}
	l.warn(pr.header+":"+strconv.Itoa(int(pr.kind)), fmt.Sprintf("%s %.40q %s; %s", pr.header, pr.value, what, kept))
}

// warn keeps a warning, once per key. l.mu is held.
func (l *Limiter) warn(key, text string) {
	if !l.warned[key] {
		l.warned[key] = true
		l.warnings = append(l.warnings, "rate limits: "+text)
	}
}

// hold is what keeps a call from going.
type hold struct {
	ahead int           // callers ahead of it in the queue
	first bool          // the first answer is awaited
	wait  time.Duration // how long the quota by needs, when that is what is missing
	by    dimension
}

// admit lets a call whose request is bytes long go if it may now: a free slot, and room in
// every quota for what it is expected to use. Otherwise it says what holds the call (with no
// wait when a slot, or the first answer, is what is missing). l.mu is held.
func (l *Limiter) admit(bytes int) (p Permit, h hold, ok bool) {
	if l.inFlight >= l.allowed || (!l.answered && l.inFlight > 0) {
		return Permit{}, hold{first: !l.answered}, false
	}
	now := l.clock.Now()
	input := int64(float64(bytes)*l.perByte) + 1
	p = Permit{bytes: bytes, epoch: l.epoch,
		charged: [dimensions]int64{requests: 1, tokens: input + l.output, inputTokens: input, outputTokens: l.output}}
	for d := range dimensions {
		q := &l.quotas[d]
		q.advance(now)
		if wait := q.wait(now, p.charged[d]); wait > h.wait {
			h.wait, h.by = wait, d
		}
	}
	if h.wait > 0 {
		return Permit{}, h, false
	}
	for d := range dimensions {
		l.quotas[d].take(p.charged[d])
	}
	p.slot = l.quotas[requests].head
	l.inFlight++
	return p, hold{}, true
}

// why words a hold for the display. l.mu is held.
func (l *Limiter) why(h hold) string {
	switch {
	case h.ahead > 0:
		return fmt.Sprintf("its turn in the rate limiter's queue, %d ahead", h.ahead)
	case h.first:
		return "the first call goes alone until an answer states the provider's limits"
	case h.wait > 0:
		return fmt.Sprintf("the %s limit, %d a minute", strings.ReplaceAll(h.by.String(), "_", " "), l.quotas[h.by].limit())
	}
	return fmt.Sprintf("a free slot: the calls allowed at once (%d) are in flight", l.allowed)
}

// leave takes w, queued since queued, out of the queue and wakes the next head. l.mu is held.
func (l *Limiter) leave(w *waiter, queued time.Time) {
	if i := slices.Index(l.queue, w); i >= 0 {
		l.queue = slices.Delete(l.queue, i, i+1)
	}
	l.waited += l.clock.Now().Sub(queued)
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

// Status is what the limiter knows and has done so far; zero for a nil limiter.
func (l *Limiter) Status() Status {
	if l == nil {
		return Status{}
	}
	now := l.clock.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	s := Status{Calls: l.calls, RateLimited: l.limited, WaitedSeconds: l.waited.Seconds(), Waiting: len(l.queue),
		Warnings: slices.Clone(l.warnings)}
	for d := range dimensions {
		q := &l.quotas[d]
		if q.limit() == 0 {
			continue
		}
		q.advance(now)
		s.Limits = append(s.Limits, InForce{Name: d.String(), Given: q.given, Learnt: q.learnt, Used: max(q.inWindow, 0)})
	}
	return s
}

// overloaded reports the error answers that mean "slow down", and their status: 429 rate
// limits, OpenAI's 503 "slow down" and Anthropic's 529 overloaded. A call that succeeded
// looks no further (errors.As would cost it an allocation).
func overloaded(callErr error) (int, bool) {
	if callErr == nil {
		return 0, false
	}
	var statusErr StatusError
	if !errors.As(callErr, &statusErr) {
		return 0, false
	}
	status := statusErr.HTTPStatus()
	return status, status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable || status == 529
}

// initialPerByte is the input tokens a request's byte is taken to hold until answers tell:
// English text runs about four characters per token, and JSON quoting and structure add
// bytes, so the guess errs high. Answers then teach the provider's own count, which can be far
// lower (Anthropic's limits leave cache reads out). The output is unknown until the answer:
// the limiter charges about the most the recent answers reported, and Release replaces both
// with the usage the provider reports.
const initialPerByte = 0.25

// minPerByte, maxPerByte and maxOutput bound what one answer teaches, so that a hostile or
// odd answer cannot make the limiter think calls free or stall it; no model writes more than
// maxOutput tokens in one answer today.
const (
	minPerByte = 0.001
	maxPerByte = 1
	maxOutput  = 1 << 17
)

// reportedUsage reads what an answer counts against each token limit into used, and reports
// whether it reports usage at all. Input: prompt_tokens (Chat Completions), else input_tokens
// and cache writes (the Responses API, Anthropic, whose limits leave cache reads out); output:
// completion_tokens, else output_tokens; tokens: total_tokens, else the two together. The
// usage object is read in one pass: this runs on every answer. An answer of the Gemini API
// has usageMetadata instead (geminiUsage).
func reportedUsage(answer []byte, used *[dimensions]int64) bool {
	u := gjson.GetBytes(answer, "usage")
	if !u.IsObject() {
		return geminiUsage(gjson.GetBytes(answer, "usageMetadata"), used)
	}
	var n [len(usageFields)]int64
	var has [len(usageFields)]bool
	u.ForEach(func(key, value gjson.Result) bool {
		if i := slices.Index(usageFields[:], key.Str); i >= 0 {
			// A hostile answer must not overflow a quota.
			n[i], has[i] = int64(min(max(value.Float(), 0), maxPerMinute)), true
		}
		return true
	})
	in, out, total := n[promptTokens], n[completionTokens], n[totalTokens]
	if !has[promptTokens] {
		in = n[inputTokensField] + n[cacheWriteTokens]
	}
	if !has[completionTokens] {
		out = n[outputTokensField]
	}
	if !has[totalTokens] {
		total = in + out
	}
	*used = [dimensions]int64{tokens: total, inputTokens: in, outputTokens: out}
	return true
}

// geminiUsage reads a Gemini usageMetadata object as reportedUsage reads a usage object: input,
// the prompt with the tool-use prompt; output, the answer with the thoughts, which the API
// counts apart; tokens, totalTokenCount, else the two together.
func geminiUsage(u gjson.Result, used *[dimensions]int64) bool {
	if !u.IsObject() {
		return false
	}
	count := func(field string) int64 { return int64(min(max(u.Get(field).Float(), 0), maxPerMinute)) }
	in := min(count("promptTokenCount")+count("toolUsePromptTokenCount"), maxPerMinute)
	out := min(count("candidatesTokenCount")+count("thoughtsTokenCount"), maxPerMinute)
	total := count("totalTokenCount")
	if !u.Get("totalTokenCount").Exists() {
		total = min(in+out, maxPerMinute)
	}
	*used = [dimensions]int64{tokens: total, inputTokens: in, outputTokens: out}
	return true
}

// usageFields are the usage fields reportedUsage reads, in the order of their indexes below.
var usageFields = [...]string{"prompt_tokens", "completion_tokens", "total_tokens", "input_tokens",
	"cache_creation_input_tokens", "output_tokens"}

const (
	promptTokens = iota
	completionTokens
	totalTokens
	inputTokensField
	cacheWriteTokens
	outputTokensField
)

// maxPerMinute bounds rates and counted tokens so quota arithmetic cannot overflow.
const maxPerMinute = 1e10
