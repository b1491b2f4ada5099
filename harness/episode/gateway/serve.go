package gateway

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// countTokensPath is Anthropic's token counting, which Claude Code calls: passed on to the
// provider (the model checked), as it is no model call, it counts toward no cap.
const countTokensPath = "/v1/messages/count_tokens"

// modelsPath lists the models: answered by the gateway itself, with the run's model alone.
const modelsPath = "/v1/models"

// maxRequestBytes bounds a request's body, as provider.MaxResponseBytes bounds an answer, and so
// a line of the trajectory.
const maxRequestBytes = provider.MaxResponseBytes

// ServeHTTP answers one request of the agent: a model call passed on to the provider, or an
// error in the protocol's own shape. What needs no body (the token, the path, the method, a
// declared length over the cap) is checked before a byte of it is read, so that a refused
// request costs the host nothing; the body is then read once, bounded, checked strictly, and
// every later check reads the bytes that are forwarded.
func (g *Gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body []byte // nil until read: what a refusal records of the request
	shape := g.shapeOf(r)
	refuse := func(why refusal, format string, args ...any) {
		g.refuse(w, r, body, shape, why, fmt.Sprintf(format, args...))
	}
	if g.pastRefusals() {
		refuse(tooManyRefused, "aa-grade: %d requests of this episode were refused, its cap; the episode is over",
			MaxRefusals)
		return
	}
	switch {
	case !g.authorized(r):
		refuse(badToken, "the gateway takes only the episode's token, as a bearer token, as x-api-key or as x-goog-api-key")
		return
	case r.URL.Path == modelsPath && r.Method == http.MethodGet:
		g.listModels(w, r)
		return
	case !g.routed(r, refuse):
		return
	}
	body, done, err := g.readBody(r)
	defer done()
	switch {
	case errors.Is(err, errTooLarge):
		refuse(tooLarge, "%v", err)
		return
	case err != nil:
		return // the agent hung up before it sent its request
	}
	if err := checkStrict(body); err != nil {
		refuse(badRequest, "%v", err)
		return
	}
	upstream := g.cfg.Upstream.Protocol
	if upstream == Gemini {
		g.serveGemini(w, r, body, refuse)
		return
	}
	asked := gjson.GetBytes(body, "model")
	served, ok := g.servedModel(asked.String())
	if asked.Type != gjson.String || !ok {
		refuse(otherModel, "model %s is not served here: this run allows %q only", asked.Raw, g.cfg.Model)
		return
	}
	if served != asked.Str {
		body = replaceValue(body, asked, served)
	}
	r, body, stripped, err := g.screen(r, body)
	if err != nil {
		refuse(providerTool, "aa-grade: %v", err)
		return
	}
	if upstream == Messages && r.URL.Path == countTokensPath {
		g.forward(w, r, body, 0, stripped...)
		return
	}
	stream, err := streams(body)
	if err != nil {
		refuse(badRequest, "%v", err)
		return
	}
	if upstream == Chat && stream {
		body = withStreamUsage(body)
	}
	n, err := g.reserve()
	if err != nil {
		refuse(capReached, "aa-grade: %v; the episode can make no more model calls", err)
		return
	}
	g.forward(w, r, body, n, stripped...)
}

// routed reports whether r is a POST to a path of the run's protocol; it refuses it
// otherwise, saying where the protocol's calls go.
func (g *Gateway) routed(r *http.Request, refuse func(refusal, string, ...any)) bool {
	upstream := g.cfg.Upstream.Protocol
	var served bool
	if upstream == Gemini {
		_, name, ok := geminiCall(r.URL.Path)
		served = ok && geminiMethods[name] != 0
	} else {
		served = r.URL.Path == upstream.Path() || (upstream == Messages && r.URL.Path == countTokensPath)
	}
	switch {
	case !served:
		refuseRoute(r, upstream, refuse)
		return false
	case r.Method != http.MethodPost:
		refuse(badMethod, "%s takes POST, not %s", r.URL.Path, r.Method)
		return false
	}
	return true
}

// errTooLarge marks a request over maxRequestBytes.
var errTooLarge = fmt.Errorf("the request is larger than the gateway's cap of %d MiB", maxRequestBytes>>20)

// refuseRoute refuses a request at a path the run's protocol has no call at, saying where it
// has.
func refuseRoute(r *http.Request, upstream Protocol, refuse func(refusal, string, ...any)) {
	if p, known := protocolAt(r.URL.Path); known {
		refuse(noRoute, "this run's model speaks %s at %s, not %s", upstream, upstream.Path(), p)
		return
	}
	refuse(noRoute, "the gateway serves %s at %s, not %s %s", upstream, upstream.Path(), r.Method, r.URL.Path)
}

// shapeOf is the protocol whose error shape answers r: the one its path names, else the
// run's for a request that could be either (the models list), else as its headers suggest.
func (g *Gateway) shapeOf(r *http.Request) Protocol {
	if p, ok := protocolAt(r.URL.Path); ok {
		return p
	}
	if r.Header.Get("Anthropic-Version") != "" || r.Header.Get("X-Api-Key") != "" {
		return Messages
	}
	if g.cfg.Upstream.Protocol == Gemini || r.Header.Get("X-Goog-Api-Key") != "" ||
		strings.HasPrefix(r.URL.Path, geminiModels) {
		return Gemini
	}
	if g.cfg.Upstream.Protocol == Messages && r.URL.Path == modelsPath {
		return Messages
	}
	return Chat
}

// protocolAt is the protocol whose calls go to path.
func protocolAt(path string) (Protocol, bool) {
	for _, p := range []Protocol{Chat, Responses, Messages} {
		if path == p.Path() {
			return p, true
		}
	}
	if _, method, ok := geminiCall(path); ok && geminiMethods[method] != 0 {
		return Gemini, true
	}
	return Messages, path == countTokensPath
}

// refusal is a kind of request the gateway answers itself, with an error.
type refusal struct {
	status    int
	anthropic string // Anthropic's error type
	code      string // OpenAI's error code
	google    string // Google's error status (google.rpc.Code)
}

var (
	badToken   = refusal{http.StatusUnauthorized, "authentication_error", "invalid_api_key", "UNAUTHENTICATED"}
	otherModel = refusal{http.StatusNotFound, "not_found_error", "model_not_found", "NOT_FOUND"}
	noRoute    = refusal{http.StatusNotFound, "not_found_error", "unknown_url", "NOT_FOUND"}
	badMethod  = refusal{http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "INVALID_ARGUMENT"}
	badRequest = refusal{http.StatusBadRequest, "invalid_request_error", "invalid_request", "INVALID_ARGUMENT"}
	tooLarge   = refusal{http.StatusRequestEntityTooLarge, "request_too_large", "request_too_large", "INVALID_ARGUMENT"}
	// A call past a cap is a 400, which clients take as final: a 429 or 5xx they would retry.
	capReached = refusal{http.StatusBadRequest, "invalid_request_error", "episode_cap_reached", "FAILED_PRECONDITION"}
	// Any request once the episode's requests were refused MaxRefusals times.
	tooManyRefused = refusal{http.StatusBadRequest, "invalid_request_error", "episode_refusals_exceeded",
		"FAILED_PRECONDITION"}
	// A provider that cannot be reached, after the retries.
	unreachable = refusal{http.StatusBadGateway, "api_error", "upstream_unreachable", "UNAVAILABLE"}
)

// errorBody is message as an error answer of protocol p: OpenAI's error object, Anthropic's
// error event, or Google's error object.
func (why refusal) errorBody(p Protocol, message string) []byte {
	var v any
	switch p {
	case Messages:
		v = map[string]any{"type": "error", "error": map[string]string{"type": why.anthropic, "message": message}}
	case Gemini:
		v = map[string]any{"error": map[string]any{"code": why.status, "message": message, "status": why.google}}
	default:
		kind := "invalid_request_error"
		if why.status >= 500 {
			kind = "server_error"
		}
		v = map[string]any{"error": map[string]any{"message": message, "type": kind, "param": nil, "code": why.code}}
	}
	b, _ := json.Marshal(v) // strings and maps of strings
	return b
}

// refuse answers r with an error in the shape of protocol p, and records the attempt, up to
// MaxRefusals of them: its body as recordedBody keeps it.
func (g *Gateway) refuse(w http.ResponseWriter, r *http.Request, body []byte, p Protocol, why refusal, message string) {
	answer := why.errorBody(p, message)
	if g.refused() {
		req := model.Event{Kind: model.KindRequest, URL: r.Method + " " + recordedURI(r.URL),
			Header: provider.RecordedHeader(r.Header)}
		recordBody(&req, body)
		refused := model.Event{Kind: model.KindResponse, Status: why.status, Body: answer,
			Error: "refused by the gateway: " + message}
		g.record([]model.Event{req, refused}, nil)
	}
	writeJSON(w, why.status, answer)
}

// refusedPrefix bounds what the trajectory keeps of a refused request's body.
const refusedPrefix = 4 << 10

// recordBody puts in e what a refusal records of the request's body: a body of at most
// refusedPrefix bytes that checkStrict accepts as it is, any other its beginning, its length and
// its sha256 (model.Event.CutBody), never the whole: a flood of refused requests costs the
// host's disk a few KiB each, whatever they hold.
func recordBody(e *model.Event, body []byte) {
	switch {
	case len(body) == 0:
	case len(body) <= refusedPrefix && checkStrict(body) == nil:
		e.Body = body
	default:
		e.CutBody(body, refusedPrefix)
	}
}

// listModels answers a models list with the run's model alone, in the run's protocol's shape.
func (g *Gateway) listModels(w http.ResponseWriter, r *http.Request) {
	var v any
	if g.shapeOf(r) == Messages {
		m := map[string]any{"type": "model", "id": g.cfg.Model, "display_name": g.cfg.Model,
			"created_at": "1970-01-01T00:00:00Z"}
		v = map[string]any{"data": []any{m}, "has_more": false, "first_id": g.cfg.Model, "last_id": g.cfg.Model}
	} else {
		m := map[string]any{"id": g.cfg.Model, "object": "model", "created": 0, "owned_by": "aa-grade"}
		v = map[string]any{"object": "list", "data": []any{m}}
	}
	b, _ := json.Marshal(v) // strings and numbers
	writeJSON(w, http.StatusOK, b)
}

func writeJSON(w http.ResponseWriter, status int, b []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b) // an agent that hung up needs no answer
}

// asJSON keeps a JSON body as JSON in the trajectory, and anything else as a string.
func asJSON(b []byte) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if gjson.ValidBytes(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
