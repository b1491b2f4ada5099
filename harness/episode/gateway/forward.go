package gateway

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/http/httptrace"
	"sync/atomic"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
)

// call is one request passed on to the provider, and what it leaves in the trajectory.
type call struct {
	g        *Gateway
	w        http.ResponseWriter
	ctx      context.Context // the agent's request's, with the call's recorder
	url      string
	header   http.Header
	body     []byte
	model    bool // a model call, paced and counted (a token count is neither)
	n        int  // a model call's number
	events   []model.Event
	attempt  int
	started  time.Time
	paced    time.Duration // waiting for the limiter
	lastFail []byte        // the provider's last error answer, passed on when the retries give up
	lastHead http.Header
	lastCode int
	lastErr  error
	// answer is the answer read, a stream's put together (nil none), and err why the call
	// failed, for its turn.
	answer []byte
	err    error
	usage  *model.Usage // what the call's attempts counted at, worst cases included; nil none
}

// errRetry marks an attempt that failed where a retry may succeed; the wait is the one the
// provider asked for, 0 when it did not; cause, when set, is the provider's error answer,
// which provider.RetryWorth classifies (else err is).
type errRetry struct {
	err   error
	wait  time.Duration
	cause error
}

func (e *errRetry) Error() string { return e.err.Error() }
func (e *errRetry) Unwrap() error {
	if e.cause != nil {
		return e.cause
	}
	return e.err
}

// forward passes the agent's request, its body as checked, on to the provider with the run's
// key, retrying transient failures before anything went back to the agent, and relays the
// answer. n is the number of a model call (paced, its usage counted, recorded as a turn); 0
// for another call. before are events recorded ahead of the request (what the gateway took
// out of it).
func (g *Gateway) forward(w http.ResponseWriter, r *http.Request, body []byte, n int, before ...model.Event) {
	c := &call{g: g, w: w, url: g.cfg.Upstream.url(r.URL), header: g.upstreamHeader(r.Header), body: body, model: n > 0,
		n: n, started: time.Now()}
	c.ctx = r.Context()
	defer func() { g.record(c.events, c.turn()) }()
	c.events = append(c.events, before...)
	c.note(model.Event{Kind: model.KindRequest, URL: c.url, Header: provider.RecordedHeader(c.header), Body: body})
	for c.attempt = 1; ; c.attempt++ {
		err := c.try()
		var retry *errRetry
		if !errors.As(err, &retry) {
			return
		}
		if c.ctx.Err() != nil {
			return // the agent hung up: nobody waits for a retry
		}
		wait := g.cfg.Retry.Delay(c.attempt, retry.wait)
		if !provider.RetryWorth(retry, c.attempt) {
			c.giveUp(retry.err)
			if provider.Permanent(retry) {
				g.permanent(retry)
			}
			return
		}
		if time.Since(c.started)-c.paced+wait > g.cfg.Budget {
			c.giveUp(retry.err)
			return
		}
		c.note(model.Event{Kind: model.KindRetry, Attempt: c.attempt, Wait: wait, Error: retry.err.Error()})
		g.count(0, 1)
		if provider.SleepRetry(provider.WithRetryStop(c.ctx, g.cfg.RetryStop), wait) != nil {
			c.giveUp(retry.err)
			return
		}
	}
}

// turn is the call as a turn: the request and the reply read in the protocol's terms, with
// the key taken out of what the provider sent; nil for a call that is no model call, or when
// no one takes turns. A request the gateway cannot read shows no messages: the raw request
// line still has it.
func (c *call) turn() *turn {
	if !c.model || c.g.cfg.Turn == nil {
		return nil
	}
	d := c.g.cfg.Upstream.Protocol.dialect()
	req, _ := d.request(c.body)
	t := &turn{n: c.n, req: req, err: c.err}
	if c.answer != nil {
		reply, err := d.answer(provider.Scrub(c.answer, c.g.cfg.Upstream.APIKey))
		t.reply = reply
		if t.err == nil && err != nil {
			t.err = fmt.Errorf("read the answer: %w", err)
		}
	}
	if c.usage != nil {
		t.reply.Usage = *c.usage // what was counted: a worst case where the answer said none
	}
	if t.err != nil {
		t.err = errors.New(string(provider.Scrub([]byte(t.err.Error()), c.g.cfg.Upstream.APIKey)))
	}
	return t
}

// note adds an event to the call's record.
func (c *call) note(e model.Event) { c.events = append(c.events, e) }

// try makes one attempt: an *errRetry when it failed before anything went back to the agent
// and may be retried; any other error when it ended otherwise (the answer, or what could be
// sent of it, went back to the agent).
func (c *call) try() error {
	c.answer, c.err = nil, nil
	var permit ratelimit.Permit
	if c.model {
		queued := time.Now()
		p, err := provider.AcquireRecorded(c.ctx, c.g.cfg.Limit, len(c.body), c.note)
		if err != nil {
			c.note(model.Event{Kind: model.KindResponse, Error: "the agent hung up while the call waited for the rate limiter"})
			c.err = fmt.Errorf("the agent hung up while the call waited for the rate limiter: %w", err)
			return err
		}
		c.paced += time.Since(queued)
		permit = p
	}
	release := func(header http.Header, answer []byte, err error) {
		if !c.model {
			return
		}
		provider.ReleaseRecorded(c.g.cfg.Limit, permit, header, answer, err, c.note)
	}
	timed, cancelTimeout := context.WithTimeout(c.ctx, c.g.cfg.AttemptTimeout)
	defer cancelTimeout()
	ctx, cancel := context.WithCancelCause(timed)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(c.body))
	if err != nil {
		release(nil, nil, err)
		c.giveUp(err)
		return err
	}
	req.Header = c.header.Clone()
	var sent atomic.Bool // the whole request went: the provider may bill it, answer or none
	req = req.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(i httptrace.WroteRequestInfo) { sent.Store(i.Err == nil) }}))
	resp, err := c.g.client.Do(req)
	if err != nil {
		c.note(model.Event{Kind: model.KindResponse, Error: err.Error()})
		release(nil, nil, err)
		if c.model && sent.Load() {
			c.used("", false) // sent, and no answer came back (a hang-up, a timeout): its worst case
		}
		return &errRetry{err: err}
	}
	resp.Body = provider.NewIdleBody(resp.Body, c.g.cfg.IdleTimeout, cancel)
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return c.failed(resp, release)
	}
	if ct, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); ct == "text/event-stream" {
		return c.stream(resp, release)
	}
	answer, err := io.ReadAll(io.LimitReader(resp.Body, provider.MaxResponseBytes+1))
	if err == nil && len(answer) > provider.MaxResponseBytes {
		err = fmt.Errorf("the answer is larger than the %d MiB cap on an answer", provider.MaxResponseBytes>>20)
	}
	if err != nil {
		c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode,
			Error: "the answer could not be read: " + err.Error()})
		release(resp.Header, nil, err)
		if c.model {
			c.used("", false) // an answer cut short was billed all the same
		}
		return &errRetry{err: err}
	}
	if err := provider.NotAPIAnswer(resp.StatusCode, provider.Scrub(answer, c.g.cfg.Upstream.APIKey)); err != nil {
		// An ordinary web server's page (the base URL is not the API's): no agent can read it,
		// and every call would meet the same, so it is not passed on; forward stops the run.
		c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: asJSON(answer), Error: err.Error()})
		release(resp.Header, nil, err)
		return &errRetry{err: err}
	}
	if f := c.g.cfg.Upstream.Protocol.failureIn(answer); f != nil && f.Transient() {
		c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: asJSON(answer),
			Error: "the answer reports an error"})
		return c.retryable(resp, answer, f, release)
	}
	c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: asJSON(answer)})
	c.answer = answer
	release(resp.Header, answer, nil)
	if c.model {
		c.used(gjson.GetBytes(answer, c.g.cfg.Upstream.Protocol.dialect().field).Raw, true)
	}
	c.relay(resp.StatusCode, resp.Header, answer)
	return nil
}

// failed handles an error answer: a transient one (408, 409, 429, 5xx, Anthropic's 529) is
// retried, at the wait the provider asks for; any other goes back to the agent as it came.
func (c *call) failed(resp *http.Response, release func(http.Header, []byte, error)) error {
	// What could be read of an error is enough.
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, provider.MaxResponseBytes))
	apiErr := provider.ErrorAnswer(resp.StatusCode, resp.Header, provider.Scrub(answer, c.g.cfg.Upstream.APIKey))
	c.note(model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: asJSON(answer)})
	if !apiErr.Transient() {
		release(resp.Header, nil, apiErr)
		c.err = apiErr
		c.relay(resp.StatusCode, resp.Header, answer)
		if provider.Permanent(apiErr) { // a context overflow is the agent's to handle
			c.g.permanent(apiErr)
		}
		return apiErr
	}
	return c.retryable(resp, answer, apiErr, release)
}

// retryable ends an attempt that failed with a transient error before anything went back to
// the agent (an error status, or a 200 answer or first event that reports one): the limiter
// hears it, and the answer is kept to pass on as it came should the retries give up.
func (c *call) retryable(
	resp *http.Response,
	answer []byte,
	apiErr *provider.APIError,
	release func(http.Header, []byte, error),
) error {
	release(resp.Header, nil, apiErr)
	c.err = apiErr
	c.lastFail, c.lastHead, c.lastCode, c.lastErr = answer, resp.Header, resp.StatusCode, apiErr
	why := fmt.Errorf("HTTP %d", resp.StatusCode)
	if resp.StatusCode < 400 {
		why = fmt.Errorf("HTTP %d carrying an error: %s", resp.StatusCode, apiErr.Message)
	}
	return &errRetry{err: why, wait: provider.RetryAfter(resp.Header), cause: apiErr}
}

// giveUp ends a call whose retries are spent: the provider's last error answer goes back to
// the agent, or a 502 when no answer came.
func (c *call) giveUp(err error) {
	if c.lastFail != nil {
		c.err = c.lastErr
		c.relay(c.lastCode, c.lastHead, c.lastFail)
		return
	}
	why := fmt.Sprintf("the gateway got no answer to pass on from the provider in %d attempts: %v", c.attempt, err)
	c.err = errors.New(why)
	c.note(model.Event{Kind: model.KindResponse, Status: unreachable.status, Error: why})
	c.g.count(1, 0)
	writeJSON(c.w, unreachable.status, unreachable.errorBody(c.g.cfg.Upstream.Protocol, why))
}

// used counts the usage an answer reports (usage, its usage object; "" when none), when the
// answer came whole (complete) and its usage counts tokens; any other call counts at its
// worst case (worstCase), which its no_usage event states and its turn records.
func (c *call) used(usage string, complete bool) {
	p := c.g.cfg.Upstream.Protocol
	var u model.Usage
	if usage != "" && gjson.Parse(usage).IsObject() {
		u = p.dialect().usage([]byte(usage))
	}
	if !complete || u.Input+u.Output <= 0 {
		why := "the answer reports no token usage"
		if !complete {
			why = "the answer did not come whole, so its usage is not known"
		}
		worst, how := worstCase(p, c.body)
		c.note(model.Event{Kind: model.KindNoUsage, Error: why + ": the call is " + how})
		u = worst
	}
	tools := serverToolUses(p, c.answer)
	u.WebSearches, u.ServerTools = tools.WebSearches, tools.ServerTools
	if c.usage == nil {
		c.usage = &model.Usage{}
	}
	c.usage.Add(u)
	c.g.used(u)
}

// relay sends an answer back to the agent, with the key scrubbed from it.
func (c *call) relay(status int, header http.Header, answer []byte) {
	copyAnswerHeader(c.w.Header(), header)
	c.w.WriteHeader(status)
	_, _ = c.w.Write(provider.Scrub(answer, c.g.cfg.Upstream.APIKey)) // an agent that hung up needs no answer
}

// forwardedHeaders are the agent's headers passed on to the provider: what says how to read
// the request, the API version and features asked for. The rest (credentials, an OpenAI
// organization or project of the agent's choosing, encodings the gateway would have to
// undo) stays.
var forwardedHeaders = []string{"Accept", "User-Agent", "Anthropic-Version", "Anthropic-Beta", "Openai-Beta"}

// upstreamHeader is the header of a call to the provider: the agent's forwardedHeaders and the
// run's key.
func (g *Gateway) upstreamHeader(agent http.Header) http.Header {
	h := http.Header{}
	for _, k := range forwardedHeaders {
		if v := agent.Values(k); len(v) > 0 {
			h[k] = v
		}
	}
	h.Set("Content-Type", "application/json")
	switch g.cfg.Upstream.Protocol {
	case Messages:
		h.Set("X-Api-Key", g.cfg.Upstream.APIKey)
		if h.Get("Anthropic-Version") == "" {
			h.Set("Anthropic-Version", provider.AnthropicVersion)
		}
	case Gemini:
		h.Set("X-Goog-Api-Key", g.cfg.Upstream.APIKey)
	default:
		h.Set("Authorization", "Bearer "+g.cfg.Upstream.APIKey)
	}
	return h
}

// answerHeaders are the provider's headers passed back to the agent: how to read the answer,
// the request's id, and when to retry.
var answerHeaders = []string{"Content-Type", "Request-Id", "X-Request-Id", "Retry-After", "Retry-After-Ms"}

func copyAnswerHeader(dst, src http.Header) {
	for _, k := range answerHeaders {
		if v := src.Values(k); len(v) > 0 {
			dst[k] = v
		}
	}
}
