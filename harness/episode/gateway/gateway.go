// Package gateway is the model gateway of an agent's episode (issue 26): an HTTP server that
// an agent inside the sandbox calls as it would call its provider, speaking OpenAI Chat
// Completions, the OpenAI Responses API, Anthropic Messages or Google's Gemini API, streaming
// included. The agent
// holds only the episode's token; the gateway puts the run's key on each call it passes on to
// the run's provider, so the key never enters the sandbox. It allows only the run's model,
// paces calls with the run's rate limiter, retries as the providers of harness/models/provider do,
// refuses calls past the episode's caps, and records every call, refused ones included, in the
// episode's trajectory as model.Events, each model call passed on followed by its turn (its
// request and reply read back into the vocabulary, as the loop's calls are recorded).
package gateway

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

// Protocol is one of the wire protocols the gateway speaks.
type Protocol int

const (
	// Chat is OpenAI Chat Completions, POST /v1/chat/completions.
	Chat Protocol = iota
	// Responses is the OpenAI Responses API, POST /v1/responses.
	Responses
	// Messages is Anthropic Messages, POST /v1/messages (and /v1/messages/count_tokens).
	Messages
	// Gemini is Google's Gemini API, the model in the path: POST
	// /v1beta/models/MODEL:generateContent, :streamGenerateContent?alt=sse (and :countTokens).
	Gemini
)

// String names the protocol as its provider does.
func (p Protocol) String() string {
	return [...]string{"OpenAI Chat Completions", "OpenAI Responses", "Anthropic Messages", "Google Gemini"}[p]
}

// Path is where an agent calls the protocol on the gateway.
func (p Protocol) Path() string {
	return [...]string{"/v1/chat/completions", "/v1/responses", "/v1/messages",
		provider.GeminiPath("MODEL", "generateContent")}[p]
}

// dialect is how a protocol's requests and answers read as the vocabulary's, for the turns
// and the usage, and how it reports a failure inside a 200 answer.
type dialect struct {
	request func(body []byte) (model.Request, error)
	answer  func(answer []byte) (model.Reply, error)
	stream  func() streamAnswer
	failure func(answer []byte) *provider.APIError
	usage   func(usage []byte) model.Usage
	field   string // where an answer holds its usage
}

func (p Protocol) dialect() dialect {
	return [...]dialect{
		{readChatRequest, provider.ReadChatAnswer, newChatStream, provider.ChatFailure, provider.ChatUsage, "usage"},
		{readResponsesRequest, provider.ReadResponsesAnswer, newResponsesStream, provider.ResponsesFailure,
			provider.ResponsesUsage, "usage"},
		{readAnthropicRequest, provider.ReadAnthropicAnswer, newAnthropicStream, provider.AnthropicFailure,
			provider.AnthropicUsage, "usage"},
		{readGeminiRequest, provider.ReadGeminiAnswer, newGeminiStream, provider.GeminiFailure,
			provider.GeminiUsage, "usageMetadata"},
	}[p]
}

// failureIn is the failure a 200 answer reports in place of a reply, or a stream's event
// does (its data), read as the providers of harness/models/provider read it; nil when there is none.
// A Responses stream reports one in an event of its own: response.failed, or error.
func (p Protocol) failureIn(data []byte) *provider.APIError {
	if p == Responses {
		switch gjson.GetBytes(data, "type").String() {
		case "response.failed":
			return provider.ResponsesFailure([]byte(gjson.GetBytes(data, "response").Raw))
		case "error":
			return provider.ResponsesFailure(append(append([]byte(`{"error":`), data...), '}'))
		}
	}
	return p.dialect().failure(data)
}

// Upstream is the run's provider: the protocol its model speaks and where.
type Upstream struct {
	Protocol Protocol
	// BaseURL is the API root as provider.Options has it: with /v1 for the OpenAI APIs
	// (https://api.openai.com/v1), without for Anthropic (https://api.anthropic.com) and
	// Gemini (https://generativelanguage.googleapis.com).
	BaseURL       string
	BaseURLSource string // where BaseURL came from (provider.Options'), for a refusal's error
	APIKey        string
}

// url is where a call the agent made to the gateway's URL at goes, its query kept (Claude
// Code's ?beta=true, Gemini's ?alt=sse) but for a key in it (Gemini's ?key=, the token).
func (u Upstream) url(at *url.URL) string {
	target := strings.TrimRight(u.BaseURL, "/")
	if u.Protocol == Messages || u.Protocol == Gemini {
		target += at.EscapedPath()
	} else {
		target += strings.TrimPrefix(at.Path, "/v1")
	}
	if query := withoutKey(at); query != "" {
		target += "?" + query
	}
	return target
}

// withoutKey is the query of at with no key parameter: Gemini's clients may send their key
// (here, the episode's token) as ?key=, which goes neither to the provider nor to the
// trajectory.
func withoutKey(at *url.URL) string {
	q := at.Query()
	if !q.Has(geminiKeyParam) {
		return at.RawQuery
	}
	q.Del(geminiKeyParam)
	return q.Encode()
}

// Caps bound an episode's model calls; 0 is no cap.
type Caps struct {
	Calls   int     // model calls (--max-turns)
	Tokens  int64   // input and output tokens, summed over the calls
	CostUSD float64 // at the run's prices
}

// Config is what the run gives one episode's gateway.
type Config struct {
	Token    string   // the episode's token, the only credential the gateway accepts
	Model    string   // the run's model, the only one the agent may ask for
	Mapped   []string // path.Match patterns of other names served by Model (a CLI's background model)
	Upstream Upstream
	HTTP     *http.Client   // nil: http.DefaultClient
	Retry    backoff.Policy // zero: provider.DefaultRetry
	// Budget bounds the retries of one call, time waiting for the limiter aside (default 10
	// minutes), and AttemptTimeout one attempt, a whole stream included (default 15 minutes),
	// as for the providers of harness/models/provider.
	Budget         time.Duration
	AttemptTimeout time.Duration
	// IdleTimeout bounds the gap between two bytes of an answer once its header came (default
	// provider.AnswerIdleTimeout, the providers'): an upstream that stalls mid-answer fails the
	// attempt then, retried as a timeout (or, mid-stream, cut), not at AttemptTimeout.
	IdleTimeout time.Duration
	Limit       *ratelimit.Limiter // the run's, shared by every episode; nil paces nothing
	Prices      *model.Prices      // nil: costs unknown (then Caps.CostUSD cannot be set)
	Caps        Caps
	// Record receives the episode's trajectory events. A call's events come together when the
	// call ends, so that the lines of calls made at once do not interleave; calls are
	// recorded one at a time.
	Record func(model.Event)
	// Turn, when set, receives each model call passed on as a turn, right after its events:
	// its number (in the order the calls came), the request and the reply read as the
	// vocabulary's, or the call's error. Refused calls and token counts are no turns.
	Turn func(n int, req model.Request, reply model.Reply, err error)
	// Used, when set, is told each call's usage as the call ends, so that the run's budget
	// counts it at once (as the loop's calls are counted).
	Used func(model.Usage)
	// ProviderTools passes on the tools a provider runs itself (web search, fetch, MCP, code
	// execution) and everything else a request holds; false, the gateway passes only what a
	// function-calling request may hold (allow.go), and refuses such tools.
	ProviderTools bool
	// Capped is told the first time a call is refused past a cap (the error wraps ErrCap), and
	// when the requests refused reach MaxRefusals (ErrRefusals), so that the episode can stop
	// its agent and end with its own status.
	Capped func(error)
	// Permanent is told, once, the first permanent failure of a call (provider.Permanent: a quota,
	// a key, an address not reached), so that the episode can stop its agent: the run stops
	// on it. The error names the base URL and keeps the provider's words.
	Permanent func(error)
	// RetryStop, when it closes, ends the calls' back-offs at once (provider.WithRetryStop):
	// the run was interrupted.
	RetryStop <-chan struct{}
}

// ErrCap marks a call refused because the episode reached one of its caps.
var ErrCap = errors.New("the episode reached its cap")

// ErrRefusals marks an episode whose agent's requests were refused MaxRefusals times: the
// gateway refuses everything after, unread and unrecorded, and tells Capped, so that the
// episode ends with a status of its own.
var ErrRefusals = errors.New("the gateway refused too many of the agent's requests")

// MaxRefusals caps the requests of an episode the gateway refuses and records: more than any
// honest agent meets (a CLI is refused a path or a model now and then), few enough that a
// flood of them records at most a few hundred KiB (refusedPrefix each).
const MaxRefusals = 100

// Totals are what an episode's calls added up to.
type Totals struct {
	Calls   int // model calls passed on (refused ones and token counts aside)
	Refused int // requests the gateway answered itself with an error
	// ProviderTools counts the requests refused for a provider-side tool (among Refused),
	// Stripped those passed on with something taken out.
	ProviderTools int
	Stripped      int
	Retries       int         // attempts retried
	Usage         model.Usage // as the answers report it
	CostUSD       *float64    // nil when the prices are unknown
	Capped        error       // the first cap a call was refused for, or ErrRefusals once reached; nil none
	// Permanent is the first permanent failure of a call passed on (Config.Permanent); nil none.
	Permanent error
}

// Gateway serves one episode's agent. It is an http.Handler: serve it on whatever listener
// the sandbox relays (http.Serve(l, g), or an http.Server with timeouts).
type Gateway struct {
	cfg      Config
	client   *http.Client
	recordMu sync.Mutex  // one call's events at a time
	bodies   *byteBudget // the request bodies held at once (bodyBudget)

	mu       sync.Mutex
	totals   Totals
	refusals int // the gateway's own refusals, toward MaxRefusals
}

// defaultBudget and defaultAttemptTimeout are the provider package's for its providers.
const (
	defaultBudget         = 10 * time.Minute
	defaultAttemptTimeout = 15 * time.Minute
)

// New checks cfg and returns the episode's gateway.
func New(cfg Config) (*Gateway, error) {
	switch {
	case len(cfg.Token) < 16:
		return nil, fmt.Errorf("gateway: the episode's token must be 16 characters or more, so that it cannot be guessed")
	case cfg.Model == "":
		return nil, fmt.Errorf("gateway: no model")
	case cfg.Upstream.Protocol < Chat || cfg.Upstream.Protocol > Gemini:
		return nil, fmt.Errorf("gateway: unknown protocol %d", cfg.Upstream.Protocol)
	case !strings.HasPrefix(cfg.Upstream.BaseURL, "http://") && !strings.HasPrefix(cfg.Upstream.BaseURL, "https://"):
		return nil, fmt.Errorf("gateway: the base URL of %s, %q, is no http:// or https:// URL", cfg.Upstream.Protocol,
			cfg.Upstream.BaseURL)
	case cfg.Caps.Calls < 0 || cfg.Caps.Tokens < 0 || cfg.Caps.CostUSD < 0:
		return nil, fmt.Errorf("gateway: caps must be 0 (none) or more: %+v", cfg.Caps)
	case CheckModel(cfg.Model, cfg.ProviderTools) != nil:
		return nil, fmt.Errorf("gateway: %w", CheckModel(cfg.Model, cfg.ProviderTools))
	case cfg.Caps.CostUSD > 0 && cfg.Prices == nil:
		return nil, fmt.Errorf("gateway: a cost cap of $%g needs the model's prices", cfg.Caps.CostUSD)
	}
	for _, p := range cfg.Mapped {
		if _, err := path.Match(p, ""); err != nil {
			return nil, fmt.Errorf("gateway: model pattern %q: %w", p, err)
		}
	}
	if cfg.Retry == (backoff.Policy{}) {
		cfg.Retry = provider.DefaultRetry
	}
	if cfg.Budget <= 0 {
		cfg.Budget = defaultBudget
	}
	if cfg.AttemptTimeout <= 0 {
		cfg.AttemptTimeout = defaultAttemptTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = provider.AnswerIdleTimeout
	}
	client := cfg.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	g := &Gateway{cfg: cfg, client: client, bodies: newByteBudget(bodyBudget)}
	g.totals.CostUSD = cfg.Prices.Cost(model.Usage{})
	return g, nil
}

// Totals returns the episode's totals so far.
func (g *Gateway) Totals() Totals {
	g.mu.Lock()
	defer g.mu.Unlock()
	t := g.totals
	if t.CostUSD != nil {
		cost := *t.CostUSD
		t.CostUSD = &cost
	}
	return t
}

// authorized reports whether r carries the episode's token, as a bearer token, as
// Anthropic's x-api-key or Google's x-goog-api-key, or, when the run's model speaks Gemini, as
// Google's ?key=, compared in constant time.
func (g *Gateway) authorized(r *http.Request) bool {
	token := []byte(g.cfg.Token)
	bearer, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(bearer)), token) == 1 {
		return true
	}
	if g.cfg.Upstream.Protocol == Gemini && r.URL.Query().Has(geminiKeyParam) &&
		subtle.ConstantTimeCompare([]byte(r.URL.Query().Get(geminiKeyParam)), token) == 1 {
		return true
	}
	return subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Api-Key")), token) == 1 ||
		subtle.ConstantTimeCompare([]byte(r.Header.Get("X-Goog-Api-Key")), token) == 1
}

// servedModel is the model a call asking for name goes to: the run's model, when name is it
// or matches a mapped pattern; ok false otherwise.
func (g *Gateway) servedModel(name string) (served string, ok bool) {
	if name == g.cfg.Model {
		return name, true
	}
	for _, p := range g.cfg.Mapped {
		if m, _ := path.Match(p, name); m {
			return g.cfg.Model, true
		}
	}
	return "", false
}

// reserve counts a model call about to go and returns its number, unless a cap is reached:
// then it returns the cap's error, telling Capped the first time.
func (g *Gateway) reserve() (int, error) {
	g.mu.Lock()
	err := g.capReached()
	if err == nil {
		g.totals.Calls++
		n := g.totals.Calls
		g.mu.Unlock()
		return n, nil
	}
	g.keepFirst(&g.totals.Capped, err, g.cfg.Capped)
	return 0, err
}

// keepFirst puts err in *slot, one of the totals, unless it holds one already, and then tells
// tell (when set), out of the lock. g.mu is held, and released.
func (g *Gateway) keepFirst(slot *error, err error, tell func(error)) {
	first := *slot == nil
	if first {
		*slot = err
	}
	g.mu.Unlock()
	if first && tell != nil {
		tell(err)
	}
}

// capReached is the error of the first cap the episode reached; nil none. g.mu is held.
func (g *Gateway) capReached() error {
	c, t := g.cfg.Caps, &g.totals
	switch {
	case c.Calls > 0 && t.Calls >= c.Calls:
		return fmt.Errorf("%w of %d model calls", ErrCap, c.Calls)
	case c.Tokens > 0 && t.Usage.Input+t.Usage.Output >= c.Tokens:
		return fmt.Errorf("%w of %d tokens (%d used)", ErrCap, c.Tokens, t.Usage.Input+t.Usage.Output)
	case c.CostUSD > 0 && *t.CostUSD >= c.CostUSD:
		return fmt.Errorf("%w of $%.4f ($%.4f spent)", ErrCap, c.CostUSD, *t.CostUSD)
	}
	return nil
}

// used adds a call's usage to the totals.
func (g *Gateway) used(u model.Usage) {
	g.mu.Lock()
	g.totals.Usage.Add(u)
	g.totals.CostUSD = g.cfg.Prices.Cost(g.totals.Usage)
	g.mu.Unlock()
	if g.cfg.Used != nil {
		g.cfg.Used(u)
	}
}

// refused counts a request the gateway refused, and reports whether it is to be recorded:
// those up to MaxRefusals are; the one that reaches it tells Capped (ErrRefusals).
func (g *Gateway) refused() (recorded bool) {
	g.mu.Lock()
	g.totals.Refused++
	g.refusals++
	n := g.refusals
	if n == MaxRefusals { // the refusals end the episode, whatever cap came before
		g.totals.Capped = fmt.Errorf("%w: %d refused", ErrRefusals, MaxRefusals)
	}
	capped := g.totals.Capped
	g.mu.Unlock()
	if n == MaxRefusals && g.cfg.Capped != nil {
		g.cfg.Capped(capped)
	}
	return n <= MaxRefusals
}

// pastRefusals reports whether the episode's requests were refused MaxRefusals times already.
func (g *Gateway) pastRefusals() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.refusals >= MaxRefusals
}

// permanent keeps a call's permanent failure, telling Config.Permanent the first time.
func (g *Gateway) permanent(err error) {
	src := g.cfg.Upstream.BaseURLSource
	if src == "" {
		src = "the base URL given"
	}
	err = fmt.Errorf("the provider at %s (%s) refused a call of the agent, and no retry cures it: %w",
		g.cfg.Upstream.BaseURL, src, err)
	g.mu.Lock()
	g.keepFirst(&g.totals.Permanent, err, g.cfg.Permanent)
}

// count adds to the refused requests and retried attempts.
func (g *Gateway) count(refused, retries int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.totals.Refused += refused
	g.totals.Retries += retries
}

// record hands a call's events to the trajectory, together and followed by its turn (nil
// for a call that is none), with the key scrubbed from anything the provider sent (some
// quote a rejected key in their error).
func (g *Gateway) record(events []model.Event, t *turn) {
	g.recordMu.Lock()
	defer g.recordMu.Unlock()
	key := g.cfg.Upstream.APIKey
	for _, e := range events {
		if g.cfg.Record == nil {
			break
		}
		e.Body = provider.Scrub(e.Body, key)
		e.Error = string(provider.Scrub([]byte(e.Error), key))
		g.cfg.Record(e)
	}
	if t != nil {
		g.cfg.Turn(t.n, t.req, t.reply, t.err)
	}
}

// turn is a model call as the vocabulary has it.
type turn struct {
	n     int
	req   model.Request
	reply model.Reply
	err   error
}

// UpstreamOf is the upstream of an agent run: the run's model m (a provider of harness/models/provider),
// called with the first protocol of speaks that its API offers (an OpenAI-style API serves
// Chat Completions and the Responses API; Anthropic serves Messages; Google, Gemini), and the
// model's name.
func UpstreamOf(m model.Model, speaks []Protocol) (Upstream, string, error) {
	var o provider.Options
	var offered []Protocol
	switch v := m.(type) {
	case *provider.OpenAIChat:
		o, offered = v.Options, []Protocol{Chat, Responses}
	case *provider.OpenAIResponses:
		o, offered = v.Options, []Protocol{Responses, Chat}
	case *provider.Anthropic:
		o, offered = v.Options, []Protocol{Messages}
	case *provider.Gemini:
		o, offered = v.Options, []Protocol{Gemini}
	default:
		return Upstream{}, "", fmt.Errorf("an agent calls a provider's API, which %T is not", m)
	}
	for _, p := range offered {
		if slices.Contains(speaks, p) {
			return Upstream{Protocol: p, BaseURL: o.BaseURL, BaseURLSource: o.BaseURLSource, APIKey: o.APIKey}, o.Model, nil
		}
	}
	var names []string
	for _, p := range speaks {
		names = append(names, p.String())
	}
	return Upstream{}, "", fmt.Errorf("%w: the agent speaks %s, which the model's API (%s) does not", ErrProtocol,
		strings.Join(names, " or "), offered[0])
}

// ErrProtocol marks an agent and a model that speak no protocol in common.
var ErrProtocol = errors.New("the agent cannot call this model")
