package gateway

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestReadRequests: the three APIs' requests, in the shapes their clients send (system blocks
// with cache marks, thinking blocks, developer messages, reasoning items, content parts), read
// into the vocabulary's messages and tools.
func TestReadRequests(t *testing.T) {
	call := model.ToolCall{ID: "c1", Name: "shell", Arguments: `{"cmd":"ls"}`}
	want := []model.Message{
		{Role: model.RoleSystem, Content: "Be brief."},
		{Role: model.RoleUser, Content: "Investigate."},
		{Role: model.RoleAssistant, Content: "Looking.", ToolCalls: []model.ToolCall{call}},
		{Role: model.RoleTool, ToolCallID: "c1", Content: "alerts.json"},
		{Role: model.RoleUser, Content: "Go on."},
	}
	for _, tc := range []struct {
		name  string
		read  func([]byte) (model.Request, error)
		body  string
		want  []model.Message
		tools []string
		// reasoning and hidden are what Reasoning reads of the assistant's message
		reasoning string
		hidden    bool
	}{
		{"chat", readChatRequest, `{"model":"m","messages":[{"role":"developer","content":"Be brief."},` +
			`{"role":"user","content":[{"type":"text","text":"Investigate."}]},` +
			`{"role":"assistant","content":"Looking.","tool_calls":[{"id":"c1","type":"function","function":{"name":"shell","arguments":"{\"cmd\":\"ls\"}"}}]},` +
			`{"role":"tool","tool_call_id":"c1","content":"alerts.json"},{"role":"user","content":"Go on."}],` +
			`"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object"}}}]}`, want, []string{"shell"}, "", false},
		{"responses", readResponsesRequest, `{"model":"m","instructions":"Be brief.","input":[` +
			`{"type":"message","role":"user","content":[{"type":"input_text","text":"Investigate."}]},` +
			`{"type":"reasoning","summary":[],"encrypted_content":"gAAA"},` +
			`{"role":"assistant","content":"Looking."},` +
			`{"type":"function_call","call_id":"c1","name":"shell","arguments":"{\"cmd\":\"ls\"}"},` +
			`{"type":"function_call_output","call_id":"c1","output":"alerts.json"},` +
			`{"role":"user","content":"Go on."}],` +
			`"tools":[{"type":"function","name":"shell","parameters":{"type":"object"}},{"type":"web_search"}]}`, want, []string{"shell"}, "", true},
		{"anthropic", readAnthropicRequest, `{"model":"m","system":[{"type":"text","text":"Be brief.","cache_control":{"type":"ephemeral"}}],"messages":[` +
			`{"role":"user","content":"Investigate."},` +
			`{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"s"},{"type":"text","text":"Looking."},` +
			`{"type":"tool_use","id":"c1","name":"shell","input":{"cmd":"ls"}}]},` +
			`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"alerts.json"}]},{"type":"text","text":"Go on.","cache_control":{"type":"ephemeral"}}]}],` +
			`"tools":[{"name":"shell","input_schema":{"type":"object"}}]}`, want, []string{"shell"}, "hm", false},
	} {
		req, err := tc.read([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		text, hidden := model.Reasoning(req.Messages[2].Opaque)
		if text != tc.reasoning || hidden != tc.hidden {
			t.Errorf("%s: the reply's reasoning read %q, hidden %v", tc.name, text, hidden)
		}
		for i := range req.Messages {
			req.Messages[i].Opaque = nil // what a provider keeps for itself, read above
		}
		if !reflect.DeepEqual(req.Messages, tc.want) {
			t.Errorf("%s: messages\n%+v\nwant\n%+v", tc.name, req.Messages, tc.want)
		}
		var tools []string
		for _, tool := range req.Tools {
			tools = append(tools, tool.Name)
		}
		if !reflect.DeepEqual(tools, tc.tools) {
			t.Errorf("%s: tools %v", tc.name, tools)
		}
	}
	for name, read := range map[string]func([]byte) (model.Request, error){"chat": readChatRequest, "responses": readResponsesRequest, "anthropic": readAnthropicRequest} {
		if _, err := read([]byte(`{"model":"m"}`)); err == nil {
			t.Errorf("%s: a request with no conversation read", name)
		}
	}
}

// TestResponsesReplies: items of one reply join one assistant message; a reasoning item after
// text or calls begins the next reply.
func TestResponsesReplies(t *testing.T) {
	req, err := readResponsesRequest([]byte(`{"input":[{"role":"user","content":"Go"},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"first"}]},{"type":"function_call","call_id":"a","name":"s","arguments":"{}"},` +
		`{"type":"function_call_output","call_id":"a","output":"1"},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"second"}]},{"type":"message","role":"assistant","content":[{"type":"output_text","text":"x"}]},` +
		`{"type":"reasoning","summary":[{"type":"summary_text","text":"third"}]},{"type":"function_call","call_id":"b","name":"s","arguments":"{}"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range req.Messages {
		text, _ := model.Reasoning(m.Opaque)
		got = append(got, m.Role+":"+text+":"+m.Content)
	}
	want := "user::Go assistant:first: tool::1 assistant:second:x assistant:third:"
	if strings.Join(got, " ") != want {
		t.Errorf("read %q, want %q", strings.Join(got, " "), want)
	}
}

// TestStreamAnswers: each API's stream put together reads as the answer unstreamed would:
// text, reasoning, tool calls whose arguments came in pieces, the stop reason and the usage;
// a stream cut short reads as far as it came and has not ended.
func TestStreamAnswers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stream func() streamAnswer
		read   func([]byte) (model.Reply, error)
		events []string
		ended  bool
		want   model.Reply
	}{
		{"chat", newChatStream, provider.ReadChatAnswer, []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","reasoning_content":"Let me "}}]}`,
			`{"choices":[{"index":0,"delta":{"reasoning_content":"look.","content":"Looking"}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"shell","arguments":""}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"cmd\":"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"\"ls\"}"}},{"index":1,"id":"call_2","function":{"name":"finish","arguments":"{}"}}]}}]}`,
			`{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":3,"completion_tokens_details":{"reasoning_tokens":1}}}`,
			`[DONE]`}, true,
			model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "Looking", ToolCalls: []model.ToolCall{{ID: "call_1", Name: "shell", Arguments: `{"cmd":"ls"}`}, {ID: "call_2", Name: "finish", Arguments: "{}"}},
				Opaque: json.RawMessage(`{"reasoning_content":"Let me look."}`)}, Usage: model.Usage{Input: 5, Output: 3, Reasoning: 1}, Cut: true}},
		{"chat cut", newChatStream, provider.ReadChatAnswer, []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":"Look"}}]}`}, false,
			model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "Look"}}},
		{"responses items only", newResponsesStream, provider.ReadResponsesAnswer, []string{
			`{"type":"response.created","response":{"id":"r","status":"in_progress","output":[]}}`,
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"shell","arguments":"{}"}}`}, false,
			model.Reply{Message: model.Message{Role: model.RoleAssistant,
				ToolCalls: []model.ToolCall{{ID: "c", Name: "shell", Arguments: "{}"}}}}},
		{"responses incomplete", newResponsesStream, provider.ReadResponsesAnswer, []string{
			`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Par"}]}}`,
			`{"type":"response.incomplete","response":{"status":"incomplete","output":[],"usage":{"input_tokens":4,"output_tokens":2}}}`}, true,
			model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "Par"},
				Usage: model.Usage{Input: 4, Output: 2}, Cut: true}},
		{"anthropic", newAnthropicStream, provider.ReadAnthropicAnswer, []string{
			`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":9,"cache_read_input_tokens":1,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hm."}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"sig"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"t1","name":"Bash","input":{}}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"command\": "}}`,
			`{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"ls\"}"}}`,
			`{"type":"content_block_stop","index":1}`,
			`{"type":"message_delta","delta":{"stop_reason":"max_tokens"},"usage":{"output_tokens":6}}`,
			`{"type":"message_stop"}`}, true,
			model.Reply{Message: model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "t1", Name: "Bash", Arguments: `{"command":"ls"}`}},
				Opaque: json.RawMessage(`[{"signature":"sig","thinking":"Hm.","type":"thinking"},{"id":"t1","input":{"command":"ls"},"name":"Bash","type":"tool_use"}]`)},
				Usage: model.Usage{Input: 10, CachedRead: 1, Output: 6}, Cut: true}},
		{"anthropic cut in a call", newAnthropicStream, provider.ReadAnthropicAnswer, []string{
			`{"type":"message_start","message":{"role":"assistant","content":[],"usage":{"input_tokens":2,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"t1","name":"Bash","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"comm"}}`}, false,
			model.Reply{Message: model.Message{Role: model.RoleAssistant,
				ToolCalls: []model.ToolCall{{ID: "t1", Name: "Bash", Arguments: `"{\"comm"`}},
				Opaque:    json.RawMessage(`[{"id":"t1","input":"{\"comm","name":"Bash","type":"tool_use"}]`)}, Usage: model.Usage{Input: 2, Output: 1}}},
	} {
		s := tc.stream()
		for _, ev := range tc.events {
			s.Add([]byte(ev))
		}
		s.Add([]byte(": keep-alive")) // not JSON: nothing
		reply, err := tc.read(s.Answer())
		if err != nil {
			t.Errorf("%s: %v (%s)", tc.name, err, s.Answer())
			continue
		}
		if !reflect.DeepEqual(reply, tc.want) || s.Ended() != tc.ended {
			t.Errorf("%s: read %+v (ended %v) from %s\nwant %+v (ended %v)", tc.name, reply, s.Ended(), s.Answer(), tc.want, tc.ended)
		}
	}
}

// TestStreamAnswerBounded: a stream's answer keeps no more text than an answer may hold,
// however long the stream goes on.
func TestStreamAnswerBounded(t *testing.T) {
	s := newChatStream()
	chunk := []byte(`{"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("x", 1<<20) + `"}}]}`)
	for range provider.MaxResponseBytes>>20 + 3 {
		s.Add(chunk)
	}
	reply, err := provider.ReadChatAnswer(s.Answer())
	if err != nil || len(reply.Message.Content) != provider.MaxResponseBytes {
		t.Errorf("kept %d bytes of text (%v), want the bound, %d", len(reply.Message.Content), err, provider.MaxResponseBytes)
	}
}
