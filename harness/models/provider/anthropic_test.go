package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

const anthropicAnswer = `{"id":"msg_1","type":"message","role":"assistant","content":[
 {"type":"thinking","thinking":"The alerts point at cart.","signature":"sig-abc=="},
 {"type":"text","text":"Let me check the events."},
 {"type":"tool_use","id":"toolu_1","name":"code_exec","input":{"cmd":"grep -c Warning k8s_events_raw.tsv"}}],
 "stop_reason":"tool_use",
 "usage":{"input_tokens":50,"cache_creation_input_tokens":1000,"cache_read_input_tokens":3000,"output_tokens":120}}`

// TestAnthropicRoundTrip: a call goes with its key and version headers, and its answer reads as
// a reply (text, calls, thinking to pass back, usage); the request's shape is
// testdata/requests/messages-*.json's (TestGoldenRequests).
func TestAnthropicRoundTrip(t *testing.T) {
	f := &fakeChat{path: "/v1/messages", answers: []func(http.ResponseWriter){status(200, anthropicAnswer)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m := &Anthropic{Options: Options{Model: "claude-test", BaseURL: srv.URL, APIKey: testKey, ReasoningEffort: "max",
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}}}
	req := model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "system"},
			{Role: model.RoleUser, Content: "task"},
			{Role: model.RoleAssistant, Content: "Looking.", Opaque: json.RawMessage(`[{"type":"thinking","thinking":"first","signature":"sig-1"}]`),
				ToolCalls: []model.ToolCall{{ID: "toolu_0", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
			{Role: model.RoleTool, ToolCallID: "toolu_0", Content: "<shell_results>...</shell_results>"},
			{Role: model.RoleUser, Content: "You have 20 turns left"},
		},
		Tools: []model.Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object"}`)},
			{Name: "finish", Description: "done", Parameters: json.RawMessage(`{"type":"object"}`)}},
	}
	reply, err := m.Complete(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	h := f.headers[0]
	for name, want := range map[string]string{"x-api-key": testKey, "anthropic-version": AnthropicVersion, "Authorization": ""} {
		if got := h.Get(name); got != want {
			t.Errorf("header %s = %q, want %q", name, got, want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
	if got, want := reply.Message.Content, "Let me check the events."; got != want {
		t.Errorf("replied %q, want %q", got, want)
	}
	var arguments []string
	for _, c := range reply.Message.ToolCalls {
		arguments = append(arguments, c.Arguments)
	}
	if want := []string{`{"cmd":"grep -c Warning k8s_events_raw.tsv"}`}; !slices.Equal(arguments, want) {
		t.Errorf("tool calls of arguments %q, want %q", arguments, want)
	}
	if t.Failed() {
		t.FailNow()
	}
	if !strings.Contains(string(reply.Message.Opaque), `"signature":"sig-abc=="`) {
		t.Fatalf("thinking to pass back = %s", reply.Message.Opaque)
	}
	if want := (model.Usage{Input: 4050, CachedRead: 3000, CachedWrite: 1000, Output: 120}); reply.Usage != want {
		t.Fatalf("usage %+v, want %+v", reply.Usage, want)
	}
}

// TestAnthropicOverloadWithoutThinking: a 529 is retried, and a call without a reasoning
// effort asks for no thinking at all.
func TestAnthropicOverloadWithoutThinking(t *testing.T) {
	f := &fakeChat{path: "/v1/messages", answers: []func(http.ResponseWriter){
		status(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`),
		status(200, anthropicAnswer)}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	m := &Anthropic{Options: Options{Model: "claude-old", BaseURL: srv.URL, APIKey: testKey, MaxTokens: 8000,
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}}}
	if _, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "hi"}}}); err != nil {
		t.Fatal(err)
	}
	if !wantRequests(t, f.received, 2) {
		t.FailNow()
	}
	sent := gjson.ParseBytes(f.received[1])
	if got := sent.Get("max_tokens").Int(); got != 8000 {
		t.Errorf("max_tokens %d, want 8000", got)
	}
	for _, path := range []string{"thinking", "output_config", "tools", "tool_choice"} {
		if sent.Get(path).Exists() {
			t.Errorf("the request has %s: %s", path, sent.Raw)
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

// anthropicAPI is a Messages API server that holds every request to the rules the API
// documents and enforces (with thinking on) before answering from its queue, and refuses a
// request that breaks one with the API's own 400 and words, as the real API does.
type anthropicAPI struct {
	*fakeChat
	refused []string
}

func newAnthropicAPI(answers ...func(http.ResponseWriter)) *anthropicAPI {
	return &anthropicAPI{fakeChat: &fakeChat{path: "/v1/messages", answers: answers}}
}

func (a *anthropicAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if problem := anthropicRules(body); problem != "" {
		a.mu.Lock()
		a.refused = append(a.refused, problem)
		a.mu.Unlock()
		status(400, anthropicErrorBody("invalid_request_error", problem))(w)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	a.fakeChat.ServeHTTP(w, r)
}

// Append queues more answers.
func (a *anthropicAPI) Append(answers ...func(http.ResponseWriter)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.answers = append(a.answers, answers...)
}

// Refused returns the refusals sent so far.
func (a *anthropicAPI) Refused() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.refused...)
}

// anthropicErrorBody is an error answer in the API's shape.
func anthropicErrorBody(kind, message string) string {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": kind, "message": message}, "request_id": "req_011test"})
	return string(b)
}

// anthropicRules returns the API's refusal of a request, or "" when it follows the rules: no
// text block is blank; with thinking on, the conversation ends with a user message (no
// prefill); an assistant message holding thinking starts with it and does not end with it;
// each thinking block comes back unchanged (here: its signature is "sig-" and its text).
func anthropicRules(body []byte) string {
	msgs := gjson.GetBytes(body, "messages").Array()
	if gjson.GetBytes(body, "thinking").Exists() && (len(msgs) == 0 || msgs[len(msgs)-1].Get("role").String() != "user") {
		return "This model does not support assistant message prefill. The conversation must end with a user message."
	}
	for i, m := range msgs {
		blocks := m.Get("content").Array()
		hasThinking := false
		for j, b := range blocks {
			switch b.Get("type").String() {
			case "text":
				if strings.TrimSpace(b.Get("text").String()) == "" {
					return "messages: text content blocks must contain non-whitespace text"
				}
			case "thinking":
				hasThinking = true
				if b.Get("signature").String() != "sig-"+b.Get("thinking").String() {
					return fmt.Sprintf("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
				}
			}
		}
		if m.Get("role").String() != "assistant" || !hasThinking || len(blocks) == 0 {
			continue
		}
		if first := blocks[0].Get("type").String(); first != "thinking" && first != "redacted_thinking" {
			return fmt.Sprintf("messages.%d.content.0: If an assistant message contains any thinking blocks, the first block must be thinking or redacted_thinking. Found %s.", i, first)
		}
		if last := blocks[len(blocks)-1].Get("type").String(); last == "thinking" || last == "redacted_thinking" {
			return fmt.Sprintf("messages.%d: The final block in an assistant message cannot be `thinking`.", i)
		}
	}
	return ""
}

// anthropicReply is a 200 answer with these content blocks and ordinary usage.
func anthropicReply(content string, inputTokens int) func(http.ResponseWriter) {
	return status(200, fmt.Sprintf(`{"id":"msg_x","type":"message","role":"assistant","model":"claude-test","content":%s,
 "stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":%d,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":40}}`, content, inputTokens))
}

func newAnthropic(t *testing.T, api http.Handler) *Anthropic {
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	return &Anthropic{Options: Options{Model: "claude-test", BaseURL: srv.URL, APIKey: testKey, ReasoningEffort: "high",
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond}, Budget: time.Second}}
}

// TestAnthropicSendsContentBackInOrder: a reply's content goes back in the order received,
// thinking first and unchanged, text and calls interleaved as they were, blank text left
// out; a reply left with nothing but thinking gets the placeholder text after it.
func TestAnthropicSendsContentBackInOrder(t *testing.T) {
	interleaved := `[{"type":"thinking","thinking":"two checks","signature":"sig-two checks"},
 {"type":"text","text":"A"},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls","n":12345678901234567890}},
 {"type":"text","text":"B"},{"type":"tool_use","id":"toolu_b","name":"code_exec","input":{"cmd":"pwd"}}]`
	blankBeside := `[{"type":"thinking","thinking":"one more","signature":"sig-one more"},{"type":"text","text":"\n\n"},
 {"type":"tool_use","id":"toolu_c","name":"code_exec","input":{"cmd":"date"}}]`
	onlyThinking := `[{"type":"thinking","thinking":"hmm","signature":"sig-hmm"},{"type":"text","text":" "}]`
	api := newAnthropicAPI(anthropicReply(interleaved, 10), anthropicReply(blankBeside, 10), anthropicReply(onlyThinking, 10), anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
	m := newAnthropic(t, api)
	conv := []model.Message{{Role: model.RoleSystem, Content: "system"}, {Role: model.RoleUser, Content: "task"}}
	next := func(results ...model.Message) {
		t.Helper()
		reply, err := m.Complete(context.Background(), model.Request{Messages: conv})
		if err != nil {
			t.Fatalf("refused %q: %v", api.refused, err)
		}
		b, _ := json.Marshal(reply.Message) // as a trajectory keeps it
		var kept model.Message
		json.Unmarshal(b, &kept)
		conv = append(conv, kept)
		for _, c := range kept.ToolCalls {
			conv = append(conv, model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: "<shell_results/>"})
		}
		if len(kept.ToolCalls) == 0 {
			conv = append(conv, model.Message{Role: model.RoleUser, Content: "Continue."})
		}
	}
	for range 4 {
		next()
	}
	sent := gjson.ParseBytes(api.received[3]).Get("messages")
	for i, want := range []string{interleaved,
		`[{"type":"thinking","thinking":"one more","signature":"sig-one more"},{"type":"tool_use","id":"toolu_c","name":"code_exec","input":{"cmd":"date"}}]`,
		`[{"type":"thinking","thinking":"hmm","signature":"sig-hmm"},{"type":"text","text":"(no answer)"}]`} {
		if got := sent.Get(fmt.Sprintf("%d.content", 1+2*i)).Raw; !sameJSON(t, got, want) {
			t.Errorf("assistant message %d went back as %s, want %s", i+1, got, want)
		}
	}
	if !strings.Contains(sent.Get("1.content.2.input").Raw, "12345678901234567890") {
		t.Errorf("tool input not sent back as received: %s", sent.Get("1.content.2.input").Raw)
	}
	if len(api.refused) != 0 {
		t.Fatalf("refused: %q", api.refused)
	}
}

// TestAnthropicErrorsInsideA200: an error object in a 200 answer is retried or not as the
// status its type stands for (api_error 500, overloaded_error 529, which also slows the
// limiter down), quoting the API's message.
func TestAnthropicErrorsInsideA200(t *testing.T) {
	api := newAnthropicAPI(
		status(200, anthropicErrorBody("overloaded_error", "Overloaded")),
		status(200, anthropicErrorBody("api_error", "Internal server error")),
		anthropicReply(`[{"type":"text","text":"fine"}]`, 10))
	m := newAnthropic(t, api)
	var events []model.Event
	m.Limit = newTestLimiter(t, ratelimit.Limits{MaxInFlight: 4})
	req := model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}}
	reply, err := m.Complete(recording(context.Background(), &events), req)
	wantReply(t, reply, err, "fine", api.received, 3)
	var retries, throttles []string
	for _, e := range events {
		switch e.Kind {
		case "retry":
			retries = append(retries, e.Error)
		case "throttle":
			throttles = append(throttles, fmt.Sprint(e.Status))
		}
	}
	if len(retries) != 2 {
		t.Fatalf("retries %q, want 2", retries)
	}
	textcheck.Has(t, "the first retry", retries[0], "529", "Overloaded")
	textcheck.Has(t, "the second retry", retries[1], "500", "Internal server error")
	if len(throttles) == 0 || throttles[0] != "529" {
		t.Errorf("throttles %q, want the first on the 529", throttles)
	}

	api = newAnthropicAPI(status(200, anthropicErrorBody("invalid_request_error", "max_tokens: 64001 > 64000")), anthropicReply(`[{"type":"text","text":"fine"}]`, 10))
	_, err = newAnthropic(t, api).Complete(context.Background(), req)
	if _, ok := wantAPIError(t, err, 400, "max_tokens: 64001 > 64000"); !ok || !wantRequests(t, api.received, 1) {
		t.FailNow()
	}
}

// TestAnthropicReferenceShapes: with Reference a request is what LiteLLM makes of the
// reference client's call: no cache marks; each tool's schema cut to type, properties and
// required (pydantic's title and description dropped, the properties' own titles kept); tool
// results as one text part whose cache_control is null, with no is_error; a reply without thinking sent back as its text
// blocks joined into one, then its calls; a reply with neither left out. Without Reference the
// lenient shapes stay.
func TestAnthropicReferenceShapes(t *testing.T) {
	schema := json.RawMessage(`{"title":"CodeExecParams","description":"d","type":"object","properties":{"cmd":{"title":"Cmd","type":"string"}},"required":["cmd"]}`)
	interleaved := json.RawMessage(`[{"type":"text","text":"A"},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}},{"type":"text","text":"B"},{"type":"tool_use","id":"toolu_b","name":"code_exec","input":{"cmd":"pwd"}}]`)
	req := model.Request{
		Messages: []model.Message{
			{Role: model.RoleSystem, Content: "system"},
			{Role: model.RoleUser, Content: "task"},
			{Role: model.RoleAssistant, Content: "A\nB", Opaque: interleaved, ToolCalls: []model.ToolCall{
				{ID: "toolu_a", Name: "code_exec", Arguments: `{"cmd":"ls"}`}, {ID: "toolu_b", Name: "code_exec", Arguments: `{"cmd":"pwd"}`}}},
			{Role: model.RoleTool, ToolCallID: "toolu_a", Content: "out a", IsError: true},
			{Role: model.RoleTool, ToolCallID: "toolu_b", Content: "out b"},
			{Role: model.RoleAssistant, Opaque: json.RawMessage(`[]`)},
			{Role: model.RoleUser, Content: "Continue."},
		},
		Tools: []model.Tool{{Name: "finish", Description: "done", Parameters: schema}, {Name: "code_exec", Description: "run", Parameters: schema}},
	}
	for _, reference := range []bool{true, false} {
		api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
		m := newAnthropic(t, api)
		m.Reference, m.ReasoningEffort, m.MaxTokens = reference, "", 64000
		if _, err := m.Complete(context.Background(), req); err != nil {
			t.Fatalf("reference %v: %v (refused %q)", reference, err, api.refused)
		}
		sent := gjson.ParseBytes(api.received[0])
		if got := strings.Contains(sent.Raw, `"cache_control":{`); got == reference { // a mark; null is none
			t.Errorf("reference %v: cache marks sent: %v", reference, got)
		}
		if got := sent.Get("max_tokens").Int(); got != 64000 {
			t.Errorf("reference %v: max_tokens %d, want 64000", reference, got)
		}
		if sent.Get("thinking").Exists() {
			t.Errorf("reference %v: the request has thinking: %s", reference, sent.Get("thinking").Raw)
		}
		if got := sent.Get("tool_choice.type").String(); got != "auto" {
			t.Errorf("reference %v: tool_choice %q, want auto", reference, got)
		}
		want := map[string]string{
			"tools.0.input_schema": `{"type":"object","properties":{"cmd":{"title":"Cmd","type":"string"}},"required":["cmd"]}`,
			"messages.1.content":   `[{"type":"text","text":"AB"},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}},{"type":"tool_use","id":"toolu_b","name":"code_exec","input":{"cmd":"pwd"}}]`,
			"messages.2.content": `[{"type":"tool_result","tool_use_id":"toolu_a","content":[{"type":"text","text":"out a","cache_control":null}]},` +
				`{"type":"tool_result","tool_use_id":"toolu_b","content":[{"type":"text","text":"out b","cache_control":null}]},{"type":"text","text":"Continue."}]`,
			"messages.#": `3`,
			"system.0":   `{"type":"text","text":"system"}`,
		}
		if !reference {
			want = map[string]string{
				"tools.0.input_schema": string(schema),
				"messages.1.content":   string(interleaved),
				"messages.2.content.0": `{"type":"tool_result","tool_use_id":"toolu_a","content":"out a","is_error":true}`,
				"messages.#":           `5`,
			}
		}
		for path, w := range want {
			if got := sent.Get(path).Raw; !sameJSON(t, got, w) {
				t.Errorf("reference %v: %s = %s, want %s", reference, path, got, w)
			}
		}
		if len(api.refused) != 0 {
			t.Errorf("reference %v: refused %q", reference, api.refused)
		}
	}
}

// TestAnthropicReferenceKeepsThinking: a reply with thinking (only with a reasoning effort,
// which the reference client cannot run on this API) goes back whole even with Reference,
// since the API refuses a tool_use turn without its thinking once thinking is on.
func TestAnthropicReferenceKeepsThinking(t *testing.T) {
	withThinking := `[{"type":"thinking","thinking":"hmm","signature":"sig-hmm"},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}}]`
	api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
	m := newAnthropic(t, api)
	m.Reference = true
	_, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "system"}, {Role: model.RoleUser, Content: "task"},
		{Role: model.RoleAssistant, Opaque: json.RawMessage(withThinking), ToolCalls: []model.ToolCall{{ID: "toolu_a", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
		{Role: model.RoleTool, ToolCallID: "toolu_a", Content: "out"}}})
	if err != nil {
		t.Fatalf("%v (refused %q)", err, api.refused)
	}
	if got := gjson.ParseBytes(api.received[0]).Get("messages.1.content").Raw; !sameJSON(t, got, withThinking) {
		t.Errorf("assistant message sent back as %s", got)
	}
}
