package provider

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// ErrOwnedField marks a model parameter that would overwrite what aa-grade itself sends: a
// field of the request the loop builds (its messages, tools, model, output cap, reasoning,
// sampling) or a header that carries the key or the protocol.
var ErrOwnedField = errors.New("is aa-grade's own")

// ownedFields are, for each API, the top-level fields of the request body that the loop
// writes or reads the answer by (stream would change the answer's shape): an extra field
// never replaces one of them, whether or not a given request carries it.
var ownedFields = map[string][]string{
	"chat": {"model", "messages", "tools", "tool_choice", "max_completion_tokens", "max_tokens",
		"reasoning_effort", "temperature", "top_p", "stream"},
	"responses": {"model", "input", "instructions", "tools", "tool_choice", "store", "include",
		"reasoning", "max_output_tokens", "temperature", "top_p", "stream"},
	"anthropic": {"model", "messages", "system", "tools", "tool_choice", "max_tokens", "thinking",
		"output_config", "temperature", "top_p", "stream"},
	"gemini": {"contents", "systemInstruction", "tools", "toolConfig", "generationConfig"},
}

// ownedHeaders carry the key, the body's type or the API's version: an extra header never
// replaces one of them (a key comes from the provider's variable, and is never recorded).
var ownedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Proxy-Authorization", "X-Goog-Api-Key",
	"Content-Type", "Content-Length", "Host", "Anthropic-Version"}

// checkParams refuses params that would overwrite a field of api's requests or an owned
// header, naming each.
func checkParams(api string, p model.Params) error {
	var owned []string
	for k := range p.Fields {
		if slices.Contains(ownedFields[api], k) {
			owned = append(owned, "field "+k)
		}
	}
	for k := range p.Headers {
		if slices.Contains(ownedHeaders, http.CanonicalHeaderKey(k)) {
			owned = append(owned, "header "+k)
		}
	}
	if len(owned) == 0 {
		return nil
	}
	slices.Sort(owned)
	return fmt.Errorf("%w: %s %w", model.ErrModelSpec, strings.Join(owned, ", "), ErrOwnedField)
}

// addParams puts the params into a request body: the temperature and nucleus under the
// names the API gives them (in config, nil: the body itself; Gemini's are in its
// generationConfig), then the extra fields at the body's top level. checkParams kept the
// fields off the body's own.
func (o *Options) addParams(body, config map[string]any, temperature, topP string) {
	if config == nil {
		config = body
	}
	if t := o.Params.Temperature; t != nil {
		config[temperature] = *t
	}
	if p := o.Params.TopP; p != nil {
		config[topP] = *p
	}
	for k, v := range o.Params.Fields {
		body[k] = v
	}
}

// recordedHeader is a request's header for the trajectory: credentials redacted, and each of
// the user's headers as its value's digest, as run.json records it, never the value.
func (o *Options) recordedHeader(h http.Header) map[string]string {
	out := RecordedHeader(h)
	for k, v := range o.Params.Headers {
		out[http.CanonicalHeaderKey(k)] = "sha256:" + model.HeaderDigest(v)
	}
	return out
}

// addHeaders puts the params' headers on a request's header, after the provider's own.
func (o *Options) addHeaders(header http.Header) {
	for k, v := range o.Params.Headers {
		header.Set(k, v)
	}
}
