package provider

import "testing"

func TestSpecOf(t *testing.T) {
	for _, c := range []struct {
		url, model, spec, base string
	}{
		{"https://api.openai.com/v1/chat/completions", "gpt-5.5", "openai/gpt-5.5", "https://api.openai.com/v1"},
		{"https://api.openai.com/v1/responses", "gpt-5.5", "openai-responses/gpt-5.5", "https://api.openai.com/v1"},
		{"https://api.anthropic.com/v1/messages", "claude-opus-4-7", "anthropic/claude-opus-4-7", "https://api.anthropic.com"},
		{"https://openrouter.ai/api/v1/chat/completions", "qwen/qwen3", "openrouter/qwen/qwen3", "https://openrouter.ai/api/v1"},
		{"https://generativelanguage.googleapis.com/v1beta/models/gemini-3.5-flash:generateContent?alt=sse", "",
			"google/gemini-3.5-flash", "https://generativelanguage.googleapis.com"},
		{"http://127.0.0.1:8000/v1/chat/completions", "Qwen/Qwen3-32B", "openai/Qwen/Qwen3-32B", "http://127.0.0.1:8000/v1"},
	} {
		spec, base, ok := SpecOf(c.url, c.model)
		if !ok {
			t.Errorf("SpecOf(%q, %q): not told", c.url, c.model)
			continue
		}
		if spec != c.spec {
			t.Errorf("SpecOf(%q, %q) = %q, want %q", c.url, c.model, spec, c.spec)
		}
		if base != c.base {
			t.Errorf("SpecOf(%q, %q) base = %q, want %q", c.url, c.model, base, c.base)
		}
	}
	for _, bad := range [][2]string{{"https://example.com/other", "m"}, {"https://api.openai.com/v1/chat/completions", ""}, {"::", "m"}} {
		if spec, _, ok := SpecOf(bad[0], bad[1]); ok {
			t.Errorf("SpecOf(%q, %q) = %q, want none", bad[0], bad[1], spec)
		}
	}
}
