package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestReferenceReasoningEcho: with Reference each route sends back what the reference client
// does: on Chat Completions reasoning_content alone (and not when empty); on the Responses API
// no reasoning item, and no store or include field. Without it every field goes back.
func TestReferenceReasoningEcho(t *testing.T) {
	chatOpaque := json.RawMessage(`{"reasoning_content":"thought","reasoning":"thought again","reasoning_details":[{"type":"reasoning.encrypted","data":"x"}]}`)
	conv := func(opaque json.RawMessage) model.Request {
		return model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "system"},
			{Role: model.RoleUser, Content: "task"},
			{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c0", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}, Opaque: opaque},
			{Role: model.RoleTool, ToolCallID: "c0", Content: "out"}}, Tools: responsesTools}
	}
	for _, keepAll := range []bool{false, true} {
		f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer), status(200, toolAnswer)}}
		chat := &OpenAIChat{testOptions(t, f)}
		chat.Reference = !keepAll
		if _, err := chat.Complete(context.Background(), conv(chatOpaque)); err != nil {
			t.Fatal(err)
		}
		if _, err := chat.Complete(context.Background(), conv(json.RawMessage(`{"reasoning_content":""}`))); err != nil {
			t.Fatal(err)
		}
		sent := gjson.ParseBytes(f.received[0]).Get("messages.2")
		if got := sent.Get("reasoning_content").String(); got != "thought" {
			t.Errorf("keep all %v: chat assistant message sent with reasoning_content %q, want thought", keepAll, got)
		}
		for _, field := range []string{"reasoning", "reasoning_details"} {
			if sent.Get(field).Exists() != keepAll {
				t.Errorf("keep all %v: chat assistant message sent with %s: %v, want %v: %s", keepAll, field, !keepAll, keepAll, sent.Raw)
			}
		}
		if empty := gjson.ParseBytes(f.received[1]).Get("messages.2"); empty.Get("reasoning_content").Exists() != keepAll {
			t.Errorf("keep all %v: an empty reasoning_content sent as %s", keepAll, empty.Raw)
		}

		rf := &fakeChat{path: "/v1/responses", answers: []func(http.ResponseWriter){status(200, responsesTextAnswer)}}
		responses := &OpenAIResponses{testOptions(t, rf)}
		responses.Reference = !keepAll
		if _, err := responses.Complete(context.Background(), conv(json.RawMessage(`[{"type":"reasoning","encrypted_content":"enc","summary":[]}]`))); err != nil {
			t.Fatal(err)
		}
		body := gjson.ParseBytes(rf.received[0])
		for _, path := range []string{"store", "include", `input.#(type=="reasoning")`} {
			if body.Get(path).Exists() != keepAll {
				t.Errorf("keep all %v: responses request with %s: %v, want %v: %s", keepAll, path, !keepAll, keepAll, body.Raw)
			}
		}
	}
}

// TestChatMessageShapes: with Reference a Chat Completions request is shaped as the reference
// client's: text as one text part ("" for none), each tool call with the client's own fields
// (signature null, name, arguments, tool_call_id) beside the API's, each tool result with its
// tool's name; the lenient loop's has plain strings and the API's fields only.
func TestChatMessageShapes(t *testing.T) {
	for _, lenient := range []bool{false, true} {
		f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}}
		chat := &OpenAIChat{testOptions(t, f)}
		chat.Reference = !lenient
		if _, err := chat.Complete(context.Background(), conversation); err != nil {
			t.Fatal(err)
		}
		sent := gjson.ParseBytes(f.received[0])
		checks := map[string]string{
			"messages.0.content.0.type": "text", "messages.0.content.0.text": "system", "messages.1.content.0.text": "task",
			"messages.2.content": "", "messages.2.tool_calls.0.signature": "null", "messages.2.tool_calls.0.name": "code_exec",
			"messages.2.tool_calls.0.arguments": `{"cmd":"pwd"}`, "messages.2.tool_calls.0.tool_call_id": "call_0",
			"messages.2.tool_calls.0.id": "call_0", "messages.2.tool_calls.0.function.name": "code_exec",
			"messages.3.content.0.text": "<shell_results>...</shell_results>", "messages.3.name": "code_exec", "messages.3.tool_call_id": "call_0",
		}
		if lenient {
			checks = map[string]string{"messages.0.content": "system", "messages.1.content": "task", "messages.2.content": "",
				"messages.2.tool_calls.0.signature": "", "messages.2.tool_calls.0.name": "", "messages.2.tool_calls.0.tool_call_id": "",
				"messages.2.tool_calls.0.id": "call_0", "messages.3.content": "<shell_results>...</shell_results>", "messages.3.name": ""}
		}
		for path, want := range checks {
			v := sent.Get(path)
			got := v.String()
			if v.Type == gjson.Null && v.Exists() {
				got = "null"
			}
			if got != want {
				t.Errorf("lenient %v: %s = %q, want %q", lenient, path, got, want)
			}
		}
	}
}

// TestResponsesMessageShapes: with Reference a Responses request is shaped as the reference
// client's: the user's text as a role and one input_text part, the model's as a message of
// one output_text part, tools without strict; the lenient loop's has message items with
// plain strings and strict false.
func TestResponsesMessageShapes(t *testing.T) {
	conv := model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "system"},
		{Role: model.RoleUser, Content: "task"},
		{Role: model.RoleAssistant, Content: "looking", ToolCalls: []model.ToolCall{{ID: "c0", Name: "code_exec", Arguments: `{"cmd":"ls"}`}}},
		{Role: model.RoleTool, ToolCallID: "c0", Content: "out"}}, Tools: responsesTools}
	for _, lenient := range []bool{false, true} {
		f := &fakeChat{path: "/v1/responses", answers: []func(http.ResponseWriter){status(200, responsesTextAnswer)}}
		m := &OpenAIResponses{testOptions(t, f)}
		m.Reference = !lenient
		if _, err := m.Complete(context.Background(), conv); err != nil {
			t.Fatal(err)
		}
		body := gjson.ParseBytes(f.received[0])
		checks := map[string]string{"instructions": "system", "input.0.role": "user", "input.0.type": "", "input.0.content.0.type": "input_text",
			"input.0.content.0.text": "task", "input.1.type": "message", "input.1.content.0.type": "output_text", "input.1.content.0.text": "looking",
			"input.2.type": "function_call", "input.3.type": "function_call_output", "input.3.output": "out", "tools.0.strict": ""}
		if lenient {
			checks = map[string]string{"instructions": "system", "input.0.type": "message", "input.0.content": "task", "input.1.content": "looking",
				"input.3.output": "out", "tools.0.strict": "false"}
		}
		for path, want := range checks {
			if got := body.Get(path).String(); got != want {
				t.Errorf("lenient %v: %s = %q, want %q", lenient, path, got, want)
			}
		}
	}
}
