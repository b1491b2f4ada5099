package model

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","content":[
 {"type":"thinking","thinking":"The alerts point at cart.","signature":"sig-abc=="},
 {"type":"text","text":"Let me check the events."},
 {"type":"tool_use","id":"toolu_1","name":"code_exec","input":{"cmd":"grep -c Warning k8s_events_raw.tsv"}}],
 "stop_reason":"tool_use",
 "usage":{"input_tokens":50,"cache_creation_input_tokens":1000,"cache_read_input_tokens":3000,"output_tokens":120}}`

func TestAnthropicRoundTrip(t *testing.T) {
	f := &fakeChat{path: "/v1/messages", answers: []func(http.ResponseWriter){status(200, anthropicAnswer)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m := &Anthropic{Options: Options{Model: "claude-test", BaseURL: srv.URL, APIKey: testKey, ReasoningEffort: "max",
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}}}
	req := harness.Request{
		Messages: []harness.Message{
			{Role: harness.RoleSystem, Content: "system"},
			{Role: harness.RoleUser, Content: "task"},
			{Role: harness.RoleAssistant, Content: "Looking.", Opaque: json.RawMessage(`[{"type":"thinking","thinking":"first","signature":"sig-1"}]`),
				ToolCalls: []harness.ToolCall{{ID: "toolu_0", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
			{Role: harness.RoleTool, ToolCallID: "toolu_0", Content: "<shell_results>...</shell_results>"},
			{Role: harness.RoleUser, Content: "You have 20 turns left"},
		},
		Tools: []harness.Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "finish", Description: "done", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	reply, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	h := f.headers[0]
	if h.Get("x-api-key") != testKey || h.Get("anthropic-version") != AnthropicVersion || h.Get("Authorization") != "" {
		t.Fatalf("headers = %v", h)
	}
	sent := gjson.ParseBytes(f.received[0])
	for path, want := range map[string]string{
		"model": "claude-test", "max_tokens": "32000", "thinking.type": "adaptive", "output_config.effort": "max",
		"tool_choice.type": "auto", "system.0.text": "system", "system.0.cache_control.type": "ephemeral",
		"tools.1.cache_control.type": "ephemeral", "tools.0.input_schema.type": "object",
		"messages.#": "3", "messages.1.role": "assistant",
		"messages.1.content.0.type": "thinking", "messages.1.content.0.signature": "sig-1",
		"messages.1.content.1.text": "Looking.", "messages.1.content.2.type": "tool_use", "messages.1.content.2.input.cmd": "ls",
		"messages.2.role": "user", "messages.2.content.0.type": "tool_result", "messages.2.content.0.tool_use_id": "toolu_0",
		"messages.2.content.1.text": "You have 20 turns left", "messages.2.content.1.cache_control.type": "ephemeral",
		"messages.1.content.2.cache_control": "", "messages.2.content.0.cache_control": "",
	} {
		if got := sent.Get(path).String(); got != want {
			t.Errorf("request %s = %q, want %q", path, got, want)
		}
	}
	if reply.Message.Content != "Let me check the events." || len(reply.Message.ToolCalls) != 1 ||
		reply.Message.ToolCalls[0].Arguments != `{"cmd":"grep -c Warning k8s_events_raw.tsv"}` {
		t.Fatalf("reply = %+v", reply.Message)
	}
	if !strings.Contains(string(reply.Message.Opaque), `"signature":"sig-abc=="`) {
		t.Fatalf("thinking to pass back = %s", reply.Message.Opaque)
	}
	if u := reply.Usage; u.Input != 4050 || u.CachedRead != 3000 || u.CachedWrite != 1000 || u.Output != 120 {
		t.Fatalf("usage = %+v", u)
	}
}

func TestAnthropicThinkingBudgetAndOverload(t *testing.T) {
	f := &fakeChat{path: "/v1/messages", answers: []func(http.ResponseWriter){
		status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		status(200, anthropicAnswer)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m := &Anthropic{Options: Options{Model: "claude-old", BaseURL: srv.URL, APIKey: testKey, MaxTokens: 8000,
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}}, ThinkingBudget: 4000}
	if _, err := m.Complete(context.Background(), harness.Request{Messages: []harness.Message{{Role: harness.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	sent := gjson.ParseBytes(f.received[1])
	if len(f.received) != 2 || sent.Get("thinking.type").String() != "enabled" || sent.Get("thinking.budget_tokens").Int() != 4000 ||
		sent.Get("max_tokens").Int() != 8000 || sent.Get("output_config").Exists() || sent.Get("tools").Exists() || sent.Get("tool_choice").Exists() {
		t.Fatalf("%d requests, last %s", len(f.received), f.received[len(f.received)-1])
	}
}
