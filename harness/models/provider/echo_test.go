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
