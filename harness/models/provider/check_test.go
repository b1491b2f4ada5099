package provider

import (
	"context"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestCheck: the check before a run asks the models list once, with the provider's key; a
// refused key, a quota refusal or a web page fail it as permanent, naming the base URL and its
// variable; an answer, a list the server lacks (404) and a transient failure pass it.
func TestCheck(t *testing.T) {
	for _, c := range []struct {
		name      string
		provider  providerCase
		code      int
		body      string
		permanent bool
	}{
		{"openai list", chatProvider, 200, `{"object":"list","data":[{"id":"gpt-test"}]}`, false},
		{"anthropic list", anthropicProvider, 200, `{"data":[{"id":"claude-test"}],"has_more":false}`, false},
		{"gemini list", geminiProvider, 200, `{"models":[{"name":"models/gemini-test"}]}`, false},
		{"no list here", chatProvider, 404, `{"detail":"Not Found"}`, false},
		{"overloaded", anthropicProvider, 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, false},
		{"bad key", chatProvider, 401, `{"error":{"message":"Incorrect API key provided"}}`, true},
		{"quota", geminiProvider, 429, geminiDaily, true},
		{"credits", openRouterProvider, 402, openRouterPaid, true},
		{"web page", chatProvider, 200, webPage, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, requests := onceThenGood(t, c.provider, answer(c.code, c.body))
			env := map[string]string{c.provider.variable: base, "OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey, "GEMINI_API_KEY": testKey, "OPENROUTER_API_KEY": testKey}
			m, err := New(c.provider.spec, func(k string) string { return env[k] }, Options{})
			if err != nil {
				t.Fatal(err)
			}
			err = m.(Checker).Check(context.Background())
			if got := Permanent(err); got != c.permanent {
				t.Fatalf("permanent %v, want %v: %v", got, c.permanent, err)
			}
			if requests.Load() != 1 {
				t.Errorf("%d requests, want 1", requests.Load())
			}
			if c.permanent {
				textcheck.Has(t, "the error", err.Error(), base, "set by "+c.provider.variable)
			}
		})
	}
}
