package provider

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Checker is a model whose endpoint can be checked before a run's first call (the providers').
type Checker interface {
	// Check asks the provider's models list once, which costs no token and proves the base
	// URL and the key: nil when it answers, or when its answer proves nothing either way (see
	// Options.check); the call's permanent failure otherwise, naming the base URL and where
	// it came from.
	Check(ctx context.Context) error
}

// checkTimeout bounds the check: a models list answers at once.
const checkTimeout = 30 * time.Second

// check GETs url once with header. A permanent failure (a refused key, a quota or billing
// refusal, an address not reached, a web page in place of the API's JSON) is the error, as
// Complete would report it; a 404 or 405 is not (a server of the API may have no models list,
// and the first call tells), nor a transient failure (the run's retries ride it out).
func (o *Options) check(ctx context.Context, url string, header http.Header) error {
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	_, _, err := o.once(ctx, o.client(), http.MethodGet, url, header, nil, nil)
	var apiErr *APIError
	if errors.As(err, &apiErr) &&
		(apiErr.Status == http.StatusNotFound || apiErr.Status == http.StatusMethodNotAllowed) {
		return nil
	}
	if Permanent(err) {
		return o.refusal(1, err)
	}
	return nil
}

// Check asks GET /models (OpenAI, OpenRouter and the servers that speak their API).
func (m *OpenAIChat) Check(ctx context.Context) error {
	header := http.Header{}
	if m.APIKey != "" {
		header.Set("Authorization", "Bearer "+m.APIKey)
	}
	return m.check(ctx, m.BaseURL+"/models", header)
}

// Check asks GET /models.
func (m *OpenAIResponses) Check(ctx context.Context) error {
	return m.check(ctx, m.BaseURL+"/models", http.Header{"Authorization": {"Bearer " + m.APIKey}})
}

// Check asks GET /v1/models.
func (m *Anthropic) Check(ctx context.Context) error {
	return m.check(ctx, m.BaseURL+"/v1/models",
		http.Header{"X-Api-Key": {m.APIKey}, "Anthropic-Version": {AnthropicVersion}})
}

// Check asks GET /v1beta/models.
func (m *Gemini) Check(ctx context.Context) error {
	return m.check(ctx, m.BaseURL+"/"+GeminiAPIVersion+"/models", http.Header{"X-Goog-Api-Key": {m.APIKey}})
}
