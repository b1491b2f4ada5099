package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// newGemini is a Gemini provider calling f with short retry waits.
func newGemini(t *testing.T, f *fakeChat) *Gemini {
	o := testOptions(t, f)
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/v1")
	o.Model = "gemini-test"
	return &Gemini{Options: o}
}

const geminiPath = "/v1beta/models/gemini-test:generateContent"

// TestGeminiRoundTrip: a call goes with its key header alone, recorded redacted; a call's id on
// the wire goes back with its part and its response; the answer reads as a reply (text, the
// call, its reasoning, the parts to send back, usage). The rest of the request's shape is
// testdata/requests/gemini-*.json's (TestGoldenRequests).
func TestGeminiRoundTrip(t *testing.T) {
	f := &fakeChat{path: geminiPath, answers: []func(http.ResponseWriter){status(200, fakemodel.GeminiAnswer)}}
	m := newGemini(t, f)
	req := model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "system"},
			{Role: model.RoleUser, Content: "task"},
			{Role: model.RoleAssistant, Content: "Looking.", Opaque: json.RawMessage(`[{"text":"Looking."},{"functionCall":{"name":"code_exec","args":{"cmd":"ls"},"id":"fc-1"},"thoughtSignature":"sig-1"}]`),
				ToolCalls: []model.ToolCall{{ID: "fc-1", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
			{Role: model.RoleTool, ToolCallID: "fc-1", Content: "<shell_results>...</shell_results>"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_x", Name: "code_exec", Arguments: `{not json`}}},
			{Role: model.RoleTool, ToolCallID: "call_x", Content: "invalid arguments", IsError: true},
			{Role: model.RoleUser, Content: "You have 20 turns left"},
		},
		Tools: []model.Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
			{Name: "finish", Description: "done", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	var events []model.Event
	reply, err := m.Complete(recording(context.Background(), &events), req)
	if err != nil {
		t.Fatal(err)
	}
	h := f.headers[0]
	if h.Get("x-goog-api-key") != testKey || h.Get("Authorization") != "" {
		t.Errorf("headers = %v", h)
	}
	if rec := events[0].Header["X-Goog-Api-Key"]; rec != redacted {
		t.Errorf("the recorded request's key header is %q", rec)
	}
	// The request's shape is testdata/requests/gemini-*.json's (TestGoldenRequests); here, what
	// the canonical episode's answer lacks: a call's id on the wire, sent back with its part
	// and named by its response.
	sent := gjson.ParseBytes(f.received[0])
	if id := sent.Get("contents.1.parts.1.functionCall.id").String(); id != "fc-1" {
		t.Errorf("the call sent back with id %q, want fc-1", id)
	}
	if id := sent.Get("contents.2.parts.0.functionResponse.id").String(); id != "fc-1" {
		t.Errorf("its response names id %q, want fc-1", id)
	}
	msg := reply.Message
	if msg.Content != "Let me check the events." {
		t.Errorf("the reply's text %q", msg.Content)
	}
	if len(msg.ToolCalls) != 1 {
		t.Fatalf("the reply's calls %+v, want one", msg.ToolCalls)
	}
	if c := msg.ToolCalls[0]; c.Arguments != `{"cmd":"grep -c Warning k8s_events_raw.tsv"}` || !strings.HasPrefix(c.ID, "call_") {
		t.Errorf("the call %+v", c)
	}
	if text, _ := model.Reasoning(msg.Opaque); text != "The alerts point at cart." {
		t.Errorf("the reply's reasoning %q", text)
	}
	if !strings.Contains(string(msg.Opaque), "sig-abc==") {
		t.Errorf("the parts to send back lack the signature: %s", msg.Opaque)
	}
	if want := (model.Usage{Input: 4050, CachedRead: 3000, Output: 160, Reasoning: 40}); reply.Usage != want || reply.Cut {
		t.Errorf("usage %+v cut %v, want %+v", reply.Usage, reply.Cut, want)
	}
}

// TestGeminiCallWithoutID: a call's arguments read alike however they were written, and a call
// the API gave no id is answered without one; an answer without usageMetadata is marked.
func TestGeminiCallWithoutID(t *testing.T) {
	reply, err := ReadGeminiAnswer([]byte(fakemodel.GeminiAnswer))
	if err != nil {
		t.Fatal(err)
	}
	escaped, err := ReadGeminiAnswer([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":{"b":1.50,"a":"p \u0026\u0026 q \u003e r"}}}]}}]}`))
	if err != nil || escaped.Message.ToolCalls[0].Arguments != `{"a":"p && q > r","b":1.50}` {
		t.Errorf("arguments written another way read %+v, %v", escaped.Message.ToolCalls, err)
	}
	f := &fakeChat{path: geminiPath, answers: []func(http.ResponseWriter){status(200, `{"candidates":[{"content":{"parts":[{"text":"ok"}]}}]}`)}}
	history := []model.Message{{Role: model.RoleUser, Content: "task"}, reply.Message, {Role: model.RoleTool, ToolCallID: reply.Message.ToolCalls[0].ID, Content: "3"}}
	var events []model.Event
	if _, err := newGemini(t, f).Complete(recording(context.Background(), &events), model.Request{Messages: history}); err != nil {
		t.Fatal(err)
	}
	if kinds := eventKinds(events); !strings.Contains(kinds, string(model.KindNoUsage)) {
		t.Errorf("an answer without usageMetadata is not marked: %s", kinds)
	}
	if r := gjson.GetBytes(f.received[0], "contents.2.parts.0.functionResponse"); r.Get("id").Exists() || r.Get("name").String() != "code_exec" {
		t.Errorf("a call the API gave no id is answered %s", r.Raw)
	}
}

func TestGeminiErrors(t *testing.T) {
	errorBody := func(code int, message, status string) string {
		b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": message, "status": status}})
		return string(b)
	}
	for _, c := range []struct {
		name     string
		answers  []func(http.ResponseWriter)
		attempts int
		check    func(error) bool
	}{
		{"429 then 503 then an answer", []func(http.ResponseWriter){status(429, errorBody(429, "Resource has been exhausted", "RESOURCE_EXHAUSTED")),
			status(503, errorBody(503, "The model is overloaded", "UNAVAILABLE")), status(200, fakemodel.GeminiAnswer)}, 3, func(err error) bool { return err == nil }},
		{"an error inside a 200, retried", []func(http.ResponseWriter){status(200, errorBody(503, "overloaded", "UNAVAILABLE")), status(200, fakemodel.GeminiAnswer)}, 2,
			func(err error) bool { return err == nil }},
		{"a bad key", []func(http.ResponseWriter){status(400, errorBody(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"))}, 1,
			func(err error) bool { return Permanent(err) && strings.Contains(err.Error(), "API key not valid") }},
		{"no permission", []func(http.ResponseWriter){status(403, errorBody(403, "Permission denied", "PERMISSION_DENIED"))}, 1, Permanent},
		{"a prompt too long", []func(http.ResponseWriter){status(400, errorBody(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "INVALID_ARGUMENT"))}, 1,
			func(err error) bool { return errors.Is(err, model.ErrContextOverflow) }},
		{"a blocked prompt", []func(http.ResponseWriter){status(200, `{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":9}}`)}, 1,
			func(err error) bool { return Permanent(err) && strings.Contains(err.Error(), "blocked (SAFETY)") }},
		{"an answer with no candidate", []func(http.ResponseWriter){status(200, `{"usageMetadata":{"promptTokenCount":9}}`)}, 1,
			func(err error) bool { return errors.Is(err, errNoReply) }},
	} {
		f := &fakeChat{path: geminiPath, answers: c.answers}
		m := newGemini(t, f)
		m.Retry = backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}
		_, err := m.Complete(context.Background(), conversation)
		if !c.check(err) || len(f.received) != c.attempts {
			t.Errorf("%s: err %v after %d attempts, want %d", c.name, err, len(f.received), c.attempts)
		}
	}
}
