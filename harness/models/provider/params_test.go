package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// userParams are a user's parameters of every kind: sampling, two extra fields (a vLLM chat
// template's options, an OpenRouter routing preference) and a header.
func userParams() model.Params {
	t, p := 0.25, 0.9
	return model.Params{Temperature: &t, TopP: &p,
		Fields: map[string]json.RawMessage{"chat_template_kwargs": json.RawMessage(`{"enable_thinking":false}`),
			"provider": json.RawMessage(`{"order":["groq"]}`)},
		Headers: map[string]string{"X-Title": "aa-grade test"}}
}

// withParams sets p on whichever provider m is.
func withParams(t *testing.T, m model.Model, p model.Params) {
	switch m := m.(type) {
	case *OpenAIChat:
		m.Params = p
	case *OpenAIResponses:
		m.Params = p
	case *Anthropic:
		m.Params = p
	case *Gemini:
		m.Params = p
	default:
		t.Fatalf("no params for %T", m)
	}
}

// TestParamsInRequests: each API's request carries the user's temperature and top_p under
// its own names (Gemini's in generationConfig, beside the output cap), the extra fields at
// the body's top level as the JSON given, and the header; the loop's own fields stay.
func TestParamsInRequests(t *testing.T) {
	sampling := map[string][2]string{"chat": {"temperature", "top_p"}, "responses": {"temperature", "top_p"},
		"messages": {"temperature", "top_p"}, "gemini": {"generationConfig.temperature", "generationConfig.topP"}}
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) {
			earlier, err := a.read([]byte(a.answer))
			if err != nil {
				t.Fatal(err)
			}
			f := &fakeChat{path: a.path, answers: []func(http.ResponseWriter){status(200, a.answer)}}
			m := a.model(t, f, true)
			withParams(t, m, userParams())
			if _, err := m.Complete(context.Background(), canonicalEpisode(earlier.Message)); err != nil {
				t.Fatal(err)
			}
			body := f.received[0]
			if got := gjson.GetBytes(body, sampling[a.name][0]).Raw; got != "0.25" {
				t.Errorf("%s = %q, want 0.25 in %s", sampling[a.name][0], got, body)
			}
			if got := gjson.GetBytes(body, sampling[a.name][1]).Raw; got != "0.9" {
				t.Errorf("%s = %q, want 0.9", sampling[a.name][1], got)
			}
			if got := gjson.GetBytes(body, "chat_template_kwargs.enable_thinking").Raw; got != "false" {
				t.Errorf("chat_template_kwargs.enable_thinking = %q, want false", got)
			}
			if got := gjson.GetBytes(body, "provider.order.0").String(); got != "groq" {
				t.Errorf("provider.order.0 = %q, want groq", got)
			}
			if got := f.headers[0].Get("X-Title"); got != "aa-grade test" {
				t.Errorf("X-Title header = %q", got)
			}
			if !strings.Contains(string(body), "Find the root cause") {
				t.Errorf("the conversation is gone from %s", body)
			}
		})
	}
}

// TestParamsRefusedOverOwnFields: New refuses a field the API's requests own (each
// provider's own list: Gemini's generationConfig, Anthropic's system) and a header that
// carries the key, naming each; a field another API owns passes.
func TestParamsRefusedOverOwnFields(t *testing.T) {
	env := func(string) string { return "key-123456789" }
	for _, c := range []struct {
		spec, field, header, want string
	}{
		{"openai/m", "messages", "", "field messages"},
		{"openai-responses/m", "input", "", "field input"},
		{"anthropic/m", "system", "", "field system"},
		{"google/m", "generationConfig", "", "field generationConfig"},
		{"openrouter/o/m", "tools", "", "field tools"},
		{"openai/m", "", "authorization", "header authorization"},
		{"anthropic/m", "", "anthropic-version", "header anthropic-version"},
	} {
		p := model.Params{Fields: map[string]json.RawMessage{}, Headers: map[string]string{}}
		if c.field != "" {
			p.Fields[c.field] = json.RawMessage(`1`)
		}
		if c.header != "" {
			p.Headers[c.header] = "x"
		}
		_, err := New(c.spec, env, Options{Params: p})
		if !errors.Is(err, ErrOwnedField) {
			t.Errorf("%s with %s: %v, want ErrOwnedField", c.spec, c.want, err)
			continue
		}
		if !errors.Is(err, model.ErrModelSpec) {
			t.Errorf("%s: %v, want an ErrModelSpec", c.spec, err)
		}
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %q does not name %s", c.spec, err, c.want)
		}
	}
	gemini := model.Params{Fields: map[string]json.RawMessage{"messages": json.RawMessage(`1`)}}
	if _, err := New("google/m", env, Options{Params: gemini}); err != nil {
		t.Errorf("google/m with a field only the OpenAI APIs own: %v", err)
	}
}
