package provider

import (
	"net/url"
	"strings"
)

// SpecOf is the model spec of a request recorded in a trajectory, by the API its URL's path
// names and the model its body names (model, "" for Gemini, whose model is in the path), and
// the base URL the request was made under. ok is false when the path is no provider's: a
// spec cannot be told (and openai-api/PROVIDER/MODEL is told as openai/MODEL, its PROVIDER
// being in no request).
func SpecOf(requestURL, model string) (spec, baseURL string, ok bool) {
	u, err := url.Parse(requestURL)
	if err != nil || u.Host == "" {
		return "", "", false
	}
	path := u.Path
	cut := func(suffix string) string {
		u.Path, u.RawQuery, u.Fragment = strings.TrimSuffix(path, suffix), "", ""
		return u.String()
	}
	switch {
	case model != "" && strings.HasSuffix(path, "/chat/completions"):
		provider := "openai/"
		if u.Hostname() == "openrouter.ai" {
			provider = "openrouter/"
		}
		return provider + model, cut("/chat/completions"), true
	case model != "" && strings.HasSuffix(path, "/responses"):
		return "openai-responses/" + model, cut("/responses"), true
	case model != "" && strings.HasSuffix(path, "/v1/messages"):
		return "anthropic/" + model, cut("/v1/messages"), true
	}
	if head, call, found := strings.Cut(path, "/models/"); found {
		name, _, _ := strings.Cut(call, ":") // MODEL:generateContent, MODEL:streamGenerateContent
		if name != "" && !strings.Contains(name, "/") {
			u.Path, u.RawQuery = strings.TrimSuffix(head, "/"+GeminiAPIVersion), ""
			return "google/" + name, u.String(), true
		}
	}
	return "", "", false
}
