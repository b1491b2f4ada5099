package model

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/backoff"
)

// geminiAnswer is a generateContent answer of a thinking model: a thought, a text and a call
// without id, the signature on the call, as the API sends them.
const geminiAnswer = `{"candidates": [{"content": {"role": "model", "parts": [
  {"text": "The alerts point at cart.", "thought": true},
  {"text": "Let me check the events."},
  {"functionCall": {"name": "code_exec", "args": {"cmd": "grep -c Warning k8s_events_raw.tsv"}}, "thoughtSignature": "sig-abc=="}]},
  "finishReason": "STOP", "index": 0}],
 "usageMetadata": {"promptTokenCount": 4050, "cachedContentTokenCount": 3000, "candidatesTokenCount": 120, "thoughtsTokenCount": 40, "totalTokenCount": 4210},
 "modelVersion": "gemini-test", "responseId": "r1"}`

// newGemini is a Gemini provider calling f with short retry waits.
func newGemini(t *testing.T, f *fakeChat) *Gemini {
	o := testOptions(t, f)
	o.BaseURL = strings.TrimSuffix(o.BaseURL, "/v1")
	o.Model = "gemini-test"
	return &Gemini{Options: o}
}

const geminiPath = "/v1beta/models/gemini-test:generateContent"

func TestGeminiRoundTrip(t *testing.T) {
	f := &fakeChat{path: geminiPath, answers: []func(http.ResponseWriter){status(200, geminiAnswer)}}
	m := newGemini(t, f)
	req := Request{
		Messages: []Message{
			{Role: RoleSystem, Content: "system"},
			{Role: RoleUser, Content: "task"},
			{Role: RoleAssistant, Content: "Looking.", Opaque: json.RawMessage(`[{"text":"Looking."},{"functionCall":{"name":"code_exec","args":{"cmd":"ls"},"id":"fc-1"},"thoughtSignature":"sig-1"}]`),
				ToolCalls: []ToolCall{{ID: "fc-1", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
			{Role: RoleTool, ToolCallID: "fc-1", Content: "<shell_results>...</shell_results>"},
			{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_x", Name: "code_exec", Arguments: `{not json`}}},
			{Role: RoleTool, ToolCallID: "call_x", Content: "invalid arguments", IsError: true},
			{Role: RoleUser, Content: "You have 20 turns left"},
		},
		Tools: []Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object","additionalProperties":false}`)},
			{Name: "finish", Description: "done", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	var events []Event
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
	sent := gjson.ParseBytes(f.received[0])
	for path, want := range map[string]string{
		"systemInstruction.parts.0.text": "system", "contents.#": "5",
		"contents.0.role": "user", "contents.0.parts.0.text": "task",
		"contents.1.role": "model", "contents.1.parts.1.thoughtSignature": "sig-1", "contents.1.parts.1.functionCall.id": "fc-1",
		"contents.2.role": "user", "contents.2.parts.0.functionResponse.id": "fc-1", "contents.2.parts.0.functionResponse.name": "code_exec",
		"contents.2.parts.0.functionResponse.response.output": "<shell_results>...</shell_results>",
		"contents.3.parts.0.functionCall.args":                "{}", "contents.3.parts.0.functionCall.name": "code_exec",
		"contents.4.parts.0.functionResponse.id": "", "contents.4.parts.0.functionResponse.response.error": "invalid arguments",
		"contents.4.parts.1.text": "You have 20 turns left", "contents.5": "",
		"tools.0.functionDeclarations.#": "2", "tools.0.functionDeclarations.0.parametersJsonSchema.additionalProperties": "false",
		"toolConfig.functionCallingConfig.mode": "AUTO", "generationConfig.maxOutputTokens": "4096", "generationConfig.thinkingConfig.thinkingLevel": "high",
	} {
		if got := sent.Get(path).String(); got != want {
			t.Errorf("request %s = %q, want %q", path, got, want)
		}
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
	if text, _ := Reasoning(msg.Opaque); text != "The alerts point at cart." {
		t.Errorf("the reply's reasoning %q", text)
	}
	if !strings.Contains(string(msg.Opaque), "sig-abc==") {
		t.Errorf("the parts to send back lack the signature: %s", msg.Opaque)
	}
	if want := (Usage{Input: 4050, CachedRead: 3000, Output: 160, Reasoning: 40}); reply.Usage != want || reply.Cut {
		t.Errorf("usage %+v cut %v, want %+v", reply.Usage, reply.Cut, want)
	}
}

// TestGeminiCallIDs: a call reads with the same id in the answer and in the history an agent
// sends back, its arguments written otherwise, whether the history gives it no id or one of
// the agent's own making (the Gemini CLI's); its response answers it by that id, or by its
// place; a call the API gave no id is answered without one.
func TestGeminiCallIDs(t *testing.T) {
	reply, err := ReadGeminiAnswer([]byte(geminiAnswer))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", `,"id":"code_exec_1795790907550_0"`} {
		history := `{"contents":[{"role":"user","parts":[{"text":"task"}]},
		 {"role":"model","parts":[{"text":"Let me check the events."},{"functionCall":{"name":"code_exec","args":{"cmd":"grep -c Warning k8s_events_raw.tsv"}` + id + `}}]},
		 {"role":"user","parts":[{"functionResponse":{"name":"code_exec","response":{"output":"3"}` + id + `}}]}],
		 "systemInstruction":{"parts":[{"text":"be brief"}]},
		 "tools":[{"functionDeclarations":[{"name":"code_exec","description":"run","parameters":{"type":"OBJECT"}}]}]}`
		req, err := ReadGeminiRequest([]byte(history))
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Messages) != 4 {
			t.Fatalf("messages %+v, want the system, the task, the call and its result", req.Messages)
		}
		if got := []string{req.Messages[0].Content, req.Messages[1].Content}; !slices.Equal(got, []string{"be brief", "task"}) {
			t.Errorf("the prompts %q", got)
		}
		sent, result := req.Messages[2], req.Messages[3]
		if sent.ToolCalls[0] != reply.Message.ToolCalls[0] || sent.Content != reply.Message.Content {
			t.Errorf("id %q: the call reads %+v in the history, %+v in the answer", id, sent.ToolCalls, reply.Message.ToolCalls)
		}
		if want := (Message{Role: RoleTool, ToolCallID: sent.ToolCalls[0].ID, Content: "3"}); !reflect.DeepEqual(result, want) {
			t.Errorf("id %q: the response %+v, want %+v", id, result, want)
		}
		if len(req.Tools) != 1 || string(req.Tools[0].Parameters) != `{"type":"OBJECT"}` {
			t.Errorf("tools %+v", req.Tools)
		}
	}
	escaped, err := ReadGeminiAnswer([]byte(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":{"b":1.50,"a":"p \u0026\u0026 q \u003e r"}}}]}}]}`))
	if err != nil || escaped.Message.ToolCalls[0].Arguments != `{"a":"p && q > r","b":1.50}` {
		t.Errorf("arguments written another way read %+v, %v", escaped.Message.ToolCalls, err)
	}
	f := &fakeChat{path: geminiPath, answers: []func(http.ResponseWriter){status(200, `{"candidates":[{"content":{"parts":[{"text":"ok"}]}}]}`)}}
	history := []Message{{Role: RoleUser, Content: "task"}, reply.Message, {Role: RoleTool, ToolCallID: reply.Message.ToolCalls[0].ID, Content: "3"}}
	var events []Event
	if _, err := newGemini(t, f).Complete(recording(context.Background(), &events), Request{Messages: history}); err != nil {
		t.Fatal(err)
	}
	if kinds := eventKinds(events); !strings.Contains(kinds, string(KindNoUsage)) {
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
			status(503, errorBody(503, "The model is overloaded", "UNAVAILABLE")), status(200, geminiAnswer)}, 3, func(err error) bool { return err == nil }},
		{"an error inside a 200, retried", []func(http.ResponseWriter){status(200, errorBody(503, "overloaded", "UNAVAILABLE")), status(200, geminiAnswer)}, 2,
			func(err error) bool { return err == nil }},
		{"a bad key", []func(http.ResponseWriter){status(400, errorBody(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT"))}, 1,
			func(err error) bool { return Permanent(err) && strings.Contains(err.Error(), "API key not valid") }},
		{"no permission", []func(http.ResponseWriter){status(403, errorBody(403, "Permission denied", "PERMISSION_DENIED"))}, 1, Permanent},
		{"a prompt too long", []func(http.ResponseWriter){status(400, errorBody(400, "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "INVALID_ARGUMENT"))}, 1,
			func(err error) bool { return errors.Is(err, ErrContextOverflow) }},
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

// TestGeminiStream: streamed chunks put together read as the answer would unstreamed: texts
// joined, thoughts apart, the call whole, the finish reason and the last usage; the chunk with
// the finish reason ends the stream.
func TestGeminiStream(t *testing.T) {
	chunks := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"The alerts ","thought":true}]},"index":0}],"usageMetadata":{"promptTokenCount":4050},"modelVersion":"gemini-test"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"point at cart.","thought":true}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me "}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"check the events."}]},"index":0}]}`,
		`not json`,
	}
	s := NewGeminiStream()
	for _, c := range chunks {
		s.Add([]byte(c))
	}
	if s.Ended() {
		t.Fatal("the stream ended before its finish reason")
	}
	s.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"code_exec","args":{"cmd":"grep -c Warning k8s_events_raw.tsv"}},"thoughtSignature":"sig-abc=="}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":4050,"cachedContentTokenCount":3000,"candidatesTokenCount":120,"thoughtsTokenCount":40}}`))
	if !s.Ended() {
		t.Fatal("the finish reason did not end the stream")
	}
	streamed, err := ReadGeminiAnswer(s.Answer())
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := ReadGeminiAnswer([]byte(geminiAnswer))
	streamed.Message.Opaque, whole.Message.Opaque = nil, nil
	if sj, wj := mustJSON(t, streamed), mustJSON(t, whole); sj != wj {
		t.Errorf("streamed %s\nwhole    %s", sj, wj)
	}
	if parts := gjson.GetBytes(s.Answer(), "candidates.0.content.parts").Array(); len(parts) != 3 || parts[0].Get("text").String() != "The alerts point at cart." {
		t.Errorf("parts %v", parts)
	}
	if v := gjson.GetBytes(s.Answer(), "modelVersion").String(); v != "gemini-test" {
		t.Errorf("modelVersion %q", v)
	}
	cut := NewGeminiStream()
	cut.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"Let"}]},"finishReason":"MAX_TOKENS"}]}`))
	if r, _ := ReadGeminiAnswer(cut.Answer()); !r.Cut || r.Message.Content != "Let" {
		t.Errorf("a stream cut at the output cap reads %+v", r)
	}
	failed := NewGeminiStream()
	failed.Add([]byte(`{"error":{"code":500,"message":"internal","status":"INTERNAL"}}`))
	if !failed.Ended() {
		t.Error("an error chunk did not end the stream")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadGeminiRequestRefusesNoContents(t *testing.T) {
	if _, err := ReadGeminiRequest([]byte(`{"contents":"hi"}`)); err == nil || !strings.Contains(err.Error(), "no contents") {
		t.Errorf("err %v", err)
	}
}
