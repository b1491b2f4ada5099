package gateway

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/aa-grade/aa-grade/harness/models/provider"
)

// geminiModels is where the Gemini API's model methods are: /v1beta/models/MODEL:METHOD.
var geminiModels = strings.TrimSuffix(provider.GeminiPath("", ""), ":")

// geminiKeyParam is the query parameter Google's clients may send their key in.
const geminiKeyParam = "key"

// geminiMethod is what the gateway makes of a Gemini method.
type geminiMethod int

const (
	geminiCount  geminiMethod = iota + 1 // countTokens: passed on, no model call
	geminiPlain                          // generateContent
	geminiStream                         // streamGenerateContent, served as server-sent events
)

// geminiMethods are the methods served, by name.
var geminiMethods = map[string]geminiMethod{"countTokens": geminiCount, "generateContent": geminiPlain,
	"streamGenerateContent": geminiStream}

// geminiCall reads a Gemini path: the model it names (unescaped) and the method; ok false for
// a path of another shape.
func geminiCall(path string) (modelName, method string, ok bool) {
	rest, found := strings.CutPrefix(path, geminiModels)
	if !found {
		return "", "", false
	}
	modelName, method, found = strings.Cut(rest, ":")
	return modelName, method, found && modelName != "" && !strings.Contains(modelName, "/")
}

// serveGemini answers a request of an agent whose run's model speaks Gemini (the token, the
// path and the body already checked): a model call or token count at one of geminiMethods, for the run's model (or one
// mapped to it, put in its place in the path), is passed on; anything else is refused in
// Google's error shape.
func (g *Gateway) serveGemini(
	w http.ResponseWriter,
	r *http.Request,
	body []byte,
	refuse func(refusal, string, ...any),
) {
	asked, name, _ := geminiCall(r.URL.Path) // a path routed already
	method := geminiMethods[name]
	if method == geminiStream && r.URL.Query().Get("alt") != "sse" {
		refuse(badRequest, "the gateway streams as server-sent events only: call :streamGenerateContent with ?alt=sse")
		return
	}
	served, ok := g.servedModel(asked)
	if !ok {
		refuse(otherModel, "model %q is not served here: this run allows %q only", asked, g.cfg.Model)
		return
	}
	if served != asked {
		at := *r.URL
		at.Path, at.RawPath = provider.GeminiPath(served, name), ""
		r = r.WithContext(r.Context())
		r.URL = &at
	}
	r, body, stripped, err := g.screen(r, body)
	if err != nil {
		refuse(providerTool, "aa-grade: %v", err)
		return
	}
	if method == geminiCount {
		g.forward(w, r, body, 0, stripped...)
		return
	}
	n, err := g.reserve()
	if err != nil {
		refuse(capReached, "aa-grade: %v; the episode can make no more model calls", err)
		return
	}
	g.forward(w, r, body, n, stripped...)
}

// recordedURI is at's path and query for the trajectory, a key in the query redacted.
func recordedURI(at *url.URL) string {
	q := at.Query()
	if !q.Has(geminiKeyParam) {
		return at.RequestURI()
	}
	q.Set(geminiKeyParam, "[REDACTED]")
	return at.EscapedPath() + "?" + q.Encode()
}
