// Package provider talks to model providers over their HTTP APIs (plain net/http and gjson, no
// vendor SDK), behind the provider-neutral Model interface of harness/vocab/model: the
// requests each API takes, its answers read back, retries, the one rule of which failures are
// permanent, the check of an endpoint, specs and presets.
package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// Options are common to every provider.
type Options struct {
	Model           string // the provider's model id
	BaseURL         string // the API root, without trailing slash
	BaseURLSource   string // where BaseURL came from, for the error naming an unreachable provider
	APIKey          string
	MaxTokens       int    // output tokens per call; 0 lets the provider decide
	ReasoningEffort string // provider spelling (low, medium, high, xhigh, max, ...); "" unset
	// Reference makes the requests the reference client makes on the route (the reference
	// loop): reasoning_content alone sent back on Chat Completions, no reasoning item, store or
	// include on the Responses API, text as lists of parts, Stirrup's own fields on tool calls
	// and the tool's name on results, no strict on Responses tools. Without it (the lenient
	// loop, the judge) every piece of reasoning a reply came with goes back (encrypted items,
	// store false, on the Responses API) and texts are plain strings.
	Reference bool
	HTTP      *http.Client
	Retry     backoff.Policy
	Budget    time.Duration // retrying one call stops after this long (default DefaultRetryTime)
	// IdleTimeout bounds the gap between two bytes of an answer (default AnswerIdleTimeout).
	IdleTimeout time.Duration
	// AttemptTimeout bounds one attempt, answer included (default 15 minutes: a model thinking
	// at its highest effort can take minutes); an attempt that runs out is retried.
	AttemptTimeout time.Duration
	// Limit, when set, paces the calls; one limiter is shared by every episode of a run.
	Limit *ratelimit.Limiter
	// Params are the user's own generation parameters, sent in every request (checked by New
	// against the API's own fields).
	Params model.Params
}

// Endpoint is the API root the provider calls, for the run's header (never the key).
func (o *Options) Endpoint() string { return o.BaseURL }

// redacted is what replaces a secret in a recorded event.
const redacted = "[REDACTED]"

// secretHeaders carry credentials; their values are never recorded.
var secretHeaders = map[string]bool{"Authorization": true, "X-Api-Key": true, "Api-Key": true,
	"Proxy-Authorization": true, "X-Goog-Api-Key": true}

// DefaultRetry rides out rate limits: waits of 2 s doubling to 2 minutes, Retry-After
// honoured up to 10 minutes, within the call's budget.
var DefaultRetry = backoff.Policy{Base: 2 * time.Second, Max: 2 * time.Minute, MaxRetryAfter: 10 * time.Minute}

// APIError is an error answer of a provider, or an error a provider reported inside a 200
// answer (then Status is the status the error carries, 200 when it carries none).
type APIError struct {
	Status     int
	Code       string // the provider's error code when it gives one (error.code)
	Message    string // the provider's own words
	inAnswer   bool   // reported inside a 200 answer
	billing    bool   // a quota or billing refusal (billingRefusal), whatever its status
	retryAfter time.Duration
}

// Error says what came over the wire: an error status, or a 200 answer carrying an error,
// so that a log never shows a status the provider did not send.
func (e *APIError) Error() string {
	if e.inAnswer && e.Status != http.StatusOK {
		return fmt.Sprintf("HTTP 200 carrying error %d: %s", e.Status, e.Message)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

// HTTPStatus is the status the error carries: the rate limiter halves the calls in flight on
// an overload (ratelimit.StatusError).
func (e *APIError) HTTPStatus() int { return e.Status }

// MaxResponseBytes bounds a provider's answer, and so a line of a trajectory.
const MaxResponseBytes = 32 << 20

// errMalformed marks a 2xx answer that is JSON cut short: transient.
var errMalformed = errors.New("the answer is not JSON")

// errNotAPI marks a 2xx answer that is not a JSON object (an HTML page, plain text, a bare
// JSON string): the base URL is an ordinary web server, not the API, and every call would
// meet the same.
var errNotAPI = errors.New("the answer is not the API's JSON (is the base URL the API's?)")

// errIdle marks an answer whose bytes stopped coming for longer than the idle timeout: a
// server that hangs mid-answer is retried as a timeout is, without waiting for the attempt's
// whole time.
var errIdle = errors.New("the answer stopped coming")

// errNoReply marks a JSON answer that holds neither a reply nor an error the provider reports.
var errNoReply = errors.New("the answer holds no reply")

// errTooLarge marks an answer over MaxResponseBytes. No model reply comes near it (output is
// bounded by max tokens), so the server is misbehaving and asking again would not help.
var errTooLarge = fmt.Errorf("the answer is larger than the %d MiB cap on an answer", MaxResponseBytes>>20)

// failureCheck finds a failure that a provider reports inside a 2xx JSON answer; nil when
// there is none. The APIError's Status is the status the failure carries, which decides, as
// for an error status, whether it is retried.
type failureCheck func(answer []byte) *APIError

// post sends one JSON request with retries and returns the answer's body. A failure worth
// another attempt (RetryWorth: transient, or an address not reached yet a few times) is retried
// with exponential backoff and jitter, honouring retry-after-ms and Retry-After, until the
// retry time (Budget) is spent or the retries are stopped (WithRetryStop); anything else fails
// at once, a permanent failure naming the base URL and where it came from. Each attempt first
// waits for the limiter, and that wait does not count against the budget: pacing is not
// failing. The limiter's holds and changes are recorded as "queued", "paced" and "throttle"
// events.
func (o *Options) post(
	ctx context.Context,
	url string,
	header http.Header,
	body []byte,
	check failureCheck,
) ([]byte, error) {
	budget := o.Budget
	if budget <= 0 {
		budget = DefaultRetryTime
	}
	client := o.client()
	header = header.Clone()
	o.addHeaders(header)
	header.Set("Content-Type", "application/json") // set before recording, so the record shows it
	o.record(ctx, model.Event{Kind: model.KindRequest, URL: url, Header: o.recordedHeader(header), Body: body})
	record := func(e model.Event) { o.record(ctx, e) }
	start := time.Now()
	paced := time.Duration(0) // waiting for the limiter
	for attempt := 1; ; attempt++ {
		queued := time.Now()
		permit, err := AcquireRecorded(ctx, o.Limit, len(body), record)
		if err != nil {
			return nil, err
		}
		paced += time.Since(queued)
		got, answer, err := o.once(ctx, client, http.MethodPost, url, header, body, check)
		ReleaseRecorded(o.Limit, permit, got, answer, err, record)
		if err == nil {
			return answer, nil
		}
		if ctx.Err() != nil {
			return nil, err
		}
		if !RetryWorth(err, attempt) {
			return nil, o.refusal(attempt, err)
		}
		var apiErr *APIError
		retryAfter := time.Duration(0)
		if errors.As(err, &apiErr) {
			retryAfter = apiErr.retryAfter
		}
		wait := o.Retry.Delay(attempt, retryAfter)
		if time.Since(start)-paced+wait > budget {
			return nil, fmt.Errorf("gave up after %d attempts in %s (the retry time is %s): %w", attempt,
				time.Since(start).Round(time.Second), budget, err)
		}
		o.record(ctx, model.Event{Kind: model.KindRetry, Attempt: attempt, Wait: wait, Error: err.Error()})
		if serr := SleepRetry(ctx, wait); serr != nil {
			return nil, fmt.Errorf("%w after attempt %d failed: %w", serr, attempt, err)
		}
	}
}

// defaultAttemptTimeout bounds one attempt when Options.AttemptTimeout is not set.
const defaultAttemptTimeout = 15 * time.Minute

// DefaultRetryTime bounds the retries of one call when Options.Budget is not set.
const DefaultRetryTime = 10 * time.Minute

// AnswerIdleTimeout is the longest gap between two bytes of an answer once its header came,
// when Options.IdleTimeout is not set: a model thinks before its answer's header, not between
// the bytes of its body, so a body that stops coming is a server that hangs (a 500 that never
// ends), retried as a timeout after this long rather than at the attempt's 15 minutes.
const AnswerIdleTimeout = time.Minute

// client is the HTTP client the calls go through.
func (o *Options) client() *http.Client {
	if o.HTTP == nil {
		return http.DefaultClient
	}
	return o.HTTP
}

// once makes one attempt: the answer's header (nil when no answer came), its body, and its
// failure.
func (o *Options) once(
	ctx context.Context,
	client *http.Client,
	method, url string,
	header http.Header,
	body []byte,
	check failureCheck,
) (http.Header, []byte, error) {
	timeout := o.AttemptTimeout
	if timeout <= 0 {
		timeout = defaultAttemptTimeout
	}
	idle := o.IdleTimeout
	if idle <= 0 {
		idle = AnswerIdleTimeout
	}
	timed, cancelTimeout := context.WithTimeout(ctx, timeout)
	defer cancelTimeout()
	attemptCtx, cancel := context.WithCancelCause(timed)
	defer cancel(nil)
	req, err := http.NewRequestWithContext(attemptCtx, method, url, bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header = header.Clone()
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(io.LimitReader(newIdleReader(resp.Body, idle, cancel), MaxResponseBytes+1))
	if errors.Is(context.Cause(attemptCtx), errIdle) {
		err = fmt.Errorf("HTTP %d: %w (no byte for %s)", resp.StatusCode, errIdle, idle)
		o.record(ctx, model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Error: err.Error()})
		if resp.StatusCode >= 400 { // the status says enough
			apiErr := ErrorAnswer(resp.StatusCode, resp.Header, nil)
			apiErr.Message = err.Error()
			return resp.Header, nil, apiErr
		}
		return resp.Header, nil, err
	}
	if err != nil {
		return resp.Header, nil, err // a body cut short: transient
	}
	if len(answer) > MaxResponseBytes {
		o.record(ctx, model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Error: errTooLarge.Error()})
		return resp.Header, nil, errTooLarge
	}
	o.record(ctx, model.Event{Kind: model.KindResponse, Status: resp.StatusCode, Body: rawOrString(answer)})
	if resp.StatusCode >= 400 {
		return resp.Header, nil, failure(ErrorAnswer(resp.StatusCode, resp.Header, []byte(o.scrub(string(answer)))))
	}
	if !jsonguard.Shallow(answer, 512) || !gjson.ValidBytes(answer) {
		scrubbed := []byte(o.scrub(string(answer)))
		if err := NotAPIAnswer(resp.StatusCode, scrubbed); err != nil {
			return resp.Header, nil, err
		}
		return resp.Header, nil, fmt.Errorf("HTTP %d: %w (%d bytes: %.100q)", resp.StatusCode, errMalformed, len(answer),
			scrubbed)
	}
	if !gjson.ParseBytes(answer).IsObject() { // every API answers with an object; a bare string or list is not one
		return resp.Header, nil, fmt.Errorf("HTTP %d: %w (%d bytes: %.100q)", resp.StatusCode, errNotAPI, len(answer),
			o.scrub(string(answer)))
	}
	if check != nil {
		if apiErr := check(answer); apiErr != nil {
			apiErr.Message, apiErr.inAnswer, apiErr.retryAfter = o.scrub(apiErr.Message), true, RetryAfter(resp.Header)
			return resp.Header, nil, failure(apiErr)
		}
	}
	return resp.Header, answer, nil
}

// NotAPIAnswer is the error of a 2xx answer that is not JSON at all, an ordinary web server's
// page (errNotAPI: permanent, the base URL is not the API's), nil for one that begins as JSON
// does. The providers' calls and the gateway, which would otherwise pass such a page on to an
// agent, read answers by this one rule. answer must be scrubbed of the key: the error quotes
// its start.
func NotAPIAnswer(status int, answer []byte) error {
	if looksLikeJSON(answer) {
		return nil
	}
	return fmt.Errorf("HTTP %d: %w (%d bytes: %.100q)", status, errNotAPI, len(answer), answer)
}

// looksLikeJSON reports whether an answer that does not parse begins as JSON does (an object
// or an array), and so is JSON cut short rather than another server's page.
func looksLikeJSON(answer []byte) bool {
	trimmed := bytes.TrimSpace(answer)
	return len(trimmed) > 0 && (trimmed[0] == '{' || trimmed[0] == '[')
}

// maxRetryAfterMs bounds a retry-after-ms hint before it becomes a Duration (which a huge
// number would overflow); the retry policy's MaxRetryAfter caps it much lower anyway.
const maxRetryAfterMs = float64(24 * time.Hour / time.Millisecond)

// RetryAfter is the wait a provider asks for before a retry: retry-after-ms first (OpenAI
// and Anthropic send it, and both official SDKs read it before Retry-After: it is more
// precise than Retry-After's whole seconds), else Retry-After; 0 when neither says.
func RetryAfter(h http.Header) time.Duration {
	if ms, err := strconv.ParseFloat(strings.TrimSpace(h.Get("retry-after-ms")), 64); err == nil && ms > 0 {
		return time.Duration(min(ms, maxRetryAfterMs) * float64(time.Millisecond))
	}
	return backoff.RetryAfter(h.Get("Retry-After"))
}

// failure is the error a provider's error answer stands for: ErrContextOverflow when it says
// the prompt is too long (the loop then summarises), else the answer itself.
func failure(apiErr *APIError) error {
	if contextOverflow(apiErr) {
		return fmt.Errorf("%w: %v", model.ErrContextOverflow, apiErr)
	}
	return apiErr
}

// record hands an event to the recorder ctx carries (RecordEvent), with the key scrubbed
// wherever it appears (some providers quote part or all of a rejected key in their error
// message).
func (o *Options) record(ctx context.Context, e model.Event) {
	e.Body = o.scrubBytes(e.Body)
	e.Error = o.scrub(e.Error)
	model.RecordEvent(ctx, e)
}

// Scrub takes key out of b, which came from a provider, wherever it appears. Keys too short
// to be told from ordinary text are left (they are not real secrets: local servers take any
// word). b is returned as it is when it holds no key.
func Scrub(b []byte, key string) []byte {
	if key = strings.TrimSpace(key); len(key) < 8 || !bytes.Contains(b, []byte(key)) {
		return b
	}
	return bytes.ReplaceAll(b, []byte(key), []byte(redacted))
}

// scrubBytes takes the key and the values of the user's headers (which may be secrets too:
// model.Params.Headers) out of what came from the provider.
func (o *Options) scrubBytes(b []byte) []byte {
	b = Scrub(b, o.APIKey)
	for _, v := range o.Params.Headers {
		b = Scrub(b, v)
	}
	return b
}

// scrub takes the key and the user's headers out of text that came from the provider.
func (o *Options) scrub(s string) string { return string(o.scrubBytes([]byte(s))) }

// RecordedHeader is a request's header for the trajectory, credentials redacted.
func RecordedHeader(h http.Header) map[string]string {
	out := make(map[string]string, len(h))
	for k := range h {
		if secretHeaders[http.CanonicalHeaderKey(k)] {
			out[k] = redacted
		} else {
			out[k] = h.Get(k)
		}
	}
	return out
}

// ErrUnreachable marks a provider that could not be reached at all: no connection, no such
// host, no TLS handshake. A run stops on it within seconds instead of retrying for minutes, as
// every other call would meet the same.
var ErrUnreachable = errors.New("cannot reach the provider")

// refusal is the error of a call that failed for good after attempts: a permanent one names
// the base URL and where it came from (the variable that set it, or the default), so the fix
// is plain, and keeps the provider's own message.
func (o *Options) refusal(attempts int, err error) error {
	if Classify(err) != ClassPermanent {
		return err
	}
	src := o.BaseURLSource
	if src == "" {
		src = "the base URL given"
	}
	if backoff.Unreachable(err) {
		return fmt.Errorf("%w at %s (%s) after %d attempts: %w", ErrUnreachable, o.BaseURL, src, attempts, err)
	}
	return fmt.Errorf("the provider at %s (%s) refused the call, and no retry cures it: %w", o.BaseURL, src, err)
}

// transientNetwork reports whether a failure to get an answer is worth retrying.
func transientNetwork(err error) bool {
	var ne net.Error
	return errors.Is(err, errMalformed) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) ||
		errors.As(err, &ne) || strings.Contains(err.Error(), "connection reset") ||
		strings.Contains(err.Error(), "connection refused")
}

// errorMessage finds the provider's message in an error body (OpenAI and Anthropic both use
// error.message), else the body itself, shortened.
func errorMessage(body []byte) string {
	if m := gjson.GetBytes(body, "error.message"); m.Exists() {
		return m.String()
	}
	if m := gjson.GetBytes(body, "message"); m.Exists() {
		return m.String()
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 300 {
		s = s[:300] + "..."
	}
	return s
}

// contextOverflow recognises the providers' ways of saying the prompt is too long: OpenAI's
// error code, or words of the message of a 400 or 413 (Gemini's: "The input token count (N)
// exceeds the maximum number of tokens allowed (M)").
func contextOverflow(apiErr *APIError) bool {
	if apiErr.Code == "context_length_exceeded" {
		return true
	}
	if apiErr.Status != http.StatusBadRequest && apiErr.Status != http.StatusRequestEntityTooLarge {
		return false
	}
	m := strings.ToLower(apiErr.Message)
	for _, sign := range []string{"context_length_exceeded", "maximum context length", "context window",
		"prompt is too long", "too many tokens", "exceeds the maximum number of tokens"} {
		if strings.Contains(m, sign) {
			return true
		}
	}
	return false
}

// rawOrString keeps a JSON body as JSON in the trajectory, and anything else as a string.
func rawOrString(b []byte) json.RawMessage {
	if jsonguard.Shallow(b, 512) && gjson.ValidBytes(b) {
		return json.RawMessage(b)
	}
	s, _ := json.Marshal(string(b))
	return s
}

// noteMissingUsage marks, in the trajectory, an answer that reports no token counts (the
// fields input and output of its usage object, at field): the reply's usage then reads 0, and
// the mark says that this 0 is unknown, not free.
func (o *Options) noteMissingUsage(ctx context.Context, answer []byte, field, input, output string) {
	if u := gjson.GetBytes(answer, field); u.Get(input).Exists() || u.Get(output).Exists() {
		return
	}
	o.record(ctx, model.Event{Kind: model.KindNoUsage,
		Error: "the answer reports no token usage: the call's tokens are unknown and count as 0"})
}
