package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

func TestNewFromSpec(t *testing.T) {
	env := map[string]string{
		"OPENAI_API_KEY": "k1", "ANTHROPIC_API_KEY": "k2", "ANTHROPIC_BASE_URL": "http://proxy:8080/",
		"OPENROUTER_API_KEY": "k3", "GEMINI_API_KEY": "k6", "VLLM_BASE_URL": "http://127.0.0.1:8000/v1/", "MY_LAB_BASE_URL": "http://lab/v1", "MY_LAB_API_KEY": "k4",
	}
	getenv := func(k string) string { return env[k] }
	for spec, want := range map[string]struct{ kind, model, base, key string }{
		"openai/gpt-5.5":                     {"chat", "gpt-5.5", "https://api.openai.com/v1", "k1"},
		"openai-responses/gpt-5.5":           {"responses", "gpt-5.5", "https://api.openai.com/v1", "k1"},
		"anthropic/claude-opus-4-7":          {"anthropic", "claude-opus-4-7", "http://proxy:8080", "k2"},
		"google/gemini-3.5-flash":            {"google", "gemini-3.5-flash", "https://generativelanguage.googleapis.com", "k6"},
		"openrouter/google/gemini-3.5-flash": {"chat", "google/gemini-3.5-flash", "https://openrouter.ai/api/v1", "k3"},
		"openai-api/vllm/Qwen/Qwen3-32B":     {"chat", "Qwen/Qwen3-32B", "http://127.0.0.1:8000/v1", ""},
		"openai-api/my-lab/model-x":          {"chat", "model-x", "http://lab/v1", "k4"},
	} {
		m, err := New(spec, getenv, Options{MaxTokens: 1000})
		if err != nil {
			t.Errorf("%s: %v", spec, err)
			continue
		}
		var o Options
		kind := ""
		switch v := m.(type) {
		case *OpenAIChat:
			kind, o = "chat", v.Options
		case *OpenAIResponses:
			kind, o = "responses", v.Options
		case *Anthropic:
			kind, o = "anthropic", v.Options
		case *Gemini:
			kind, o = "google", v.Options
		}
		type made struct {
			kind, model, base, key string
			maxTokens              int
		}
		if got, want := (made{kind, o.Model, o.BaseURL, o.APIKey, o.MaxTokens}), (made{want.kind, want.model, want.base, want.key, 1000}); got != want {
			t.Errorf("%s: %+v, want %+v", spec, got, want)
		}
	}
	gateway := map[string]string{"OPENAI_API_KEY": "k5", "OPENAI_BASE_URL": "http://gateway:4000/v1/"}
	m, err := New("openai-responses/o4-mini", func(k string) string { return gateway[k] }, Options{})
	if r, ok := m.(*OpenAIResponses); err != nil || !ok {
		t.Errorf("openai-responses with OPENAI_BASE_URL: %#v, %v", m, err)
	} else if got, want := [3]string{r.BaseURL, r.APIKey, r.Model}, [3]string{"http://gateway:4000/v1", "k5", "o4-mini"}; got != want {
		t.Errorf("openai-responses with OPENAI_BASE_URL: base URL, key and model %q, want %q", got, want)
	}
	for spec, text := range map[string]string{
		"gpt-5":                    "expected openai/MODEL, openai-responses/MODEL, anthropic/MODEL, google/MODEL, openrouter/ORG/MODEL, openai-api/PROVIDER/MODEL",
		"openai/gpt-5":             "needs OPENAI_API_KEY",
		"openrouter/gemini":        "expected openrouter/ORG/MODEL",
		"openai-api/ollama/llama3": "needs OLLAMA_BASE_URL",
		"openai-api/vllm":          "expected openai-api/PROVIDER/MODEL",
		"builtin/baseline":         "unknown provider \"builtin\"", // the run builds it, not a provider
		"acme/model":               "unknown provider \"acme\" (expected openai/MODEL, ",
		"openai-responses/gpt-5.5": "needs OPENAI_API_KEY",
		"google/gemini-3.5-flash":  "needs GEMINI_API_KEY",
	} {
		_, err := New(spec, func(string) string { return "" }, Options{})
		if !errors.Is(err, model.ErrModelSpec) || !strings.Contains(err.Error(), text) {
			t.Errorf("%s: err %v, want one saying %q", spec, err, text)
		}
	}
}
