package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// OpenAIResponses speaks OpenAI's Responses API: every call sends the whole conversation.
// With Reference (the reference loop) it sends what the reference client does, no reasoning
// item back and no store or include field; without it (the lenient loop, the judge) it calls
// statelessly (store false) and the encrypted reasoning items of earlier replies go back,
// since with nothing stored on the server they are the only way reasoning carries from one
// turn to the next.
//
// A response with status "incomplete" (max_output_tokens, content_filter) is a cut reply
// (Reply.Cut): the reference loop ends the episode on it; the lenient loop uses its text and
// calls as they are (a call cut short has invalid arguments, which that loop answers with a
// tool error). The trajectory keeps the raw body with incomplete_details.reason.
type OpenAIResponses struct {
	Options
}

// Complete sends the conversation with every tool (tool_choice auto), if there are any.
func (m *OpenAIResponses) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	body, err := json.Marshal(m.requestBody(req))
	if err != nil {
		return model.Reply{}, err
	}
	header := http.Header{}
	header.Set("Authorization", "Bearer "+m.APIKey)
	answer, err := m.post(ctx, m.BaseURL+"/responses", header, body, ResponsesFailure)
	if err != nil {
		return model.Reply{}, fmt.Errorf("%s: %w", m.Model, err)
	}
	m.noteMissingUsage(ctx, answer, "usage", "input_tokens", "output_tokens")
	return ReadResponsesAnswer(answer)
}

// item is one JSON object of a request: an input item, a tool.
type item = map[string]any

func (m *OpenAIResponses) requestBody(req model.Request) map[string]any {
	var instructions []string
	input := make([]any, 0, len(req.Messages))
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			instructions = append(instructions, msg.Content)
		case model.RoleTool:
			input = append(input, item{"type": "function_call_output", "call_id": msg.ToolCallID, "output": msg.Content})
		case model.RoleAssistant:
			if msg.Content == "" && len(msg.ToolCalls) == 0 {
				continue // a reply with nothing to show: its reasoning led nowhere and is left out
			}
			if !m.Reference {
				input = append(input, reasoningItems(msg.Opaque)...)
			}
			if msg.Content != "" {
				input = append(input, item{"type": "message", "role": "assistant",
					"content": m.responsesText("output_text", msg.Content)})
			}
			for _, c := range msg.ToolCalls {
				input = append(input, item{"type": "function_call", "call_id": c.ID, "name": c.Name, "arguments": c.Arguments})
			}
		default:
			input = append(input, m.userItem(msg.Content))
		}
	}
	body := map[string]any{"model": m.Model, "input": input}
	if !m.Reference { // the reference client stores nothing it sends back, and asks for nothing
		body["store"], body["include"] = false, []string{"reasoning.encrypted_content"}
	}
	if len(req.Tools) > 0 { // tools and tool_choice only with tools, as on the Chat path (the judge asks with none)
		tools := make([]item, 0, len(req.Tools))
		for _, t := range req.Tools {
			// The lenient loop sends strict false: the API defaults to strict schemas, which the
			// harness's tools are not written for. The reference client sends no strict.
			tool := item{"type": "function", "name": t.Name, "description": t.Description, "parameters": t.Parameters}
			if !m.Reference {
				tool["strict"] = false
			}
			tools = append(tools, tool)
		}
		body["tools"], body["tool_choice"] = tools, "auto"
	}
	if len(instructions) > 0 {
		body["instructions"] = strings.Join(instructions, "\n\n")
	}
	if m.ReasoningEffort != "" {
		body["reasoning"] = item{"effort": m.ReasoningEffort}
	}
	if m.MaxTokens > 0 {
		body["max_output_tokens"] = m.MaxTokens
	}
	m.addParams(body, nil, "temperature", "top_p")
	return body
}

// userItem is a user message as an input item: as the reference client sends it, a role and
// a list of one input_text part; otherwise a message item with the text as a string.
func (m *OpenAIResponses) userItem(text string) item {
	if !m.Reference {
		return item{"type": "message", "role": "user", "content": text}
	}
	return item{"role": "user", "content": m.responsesText("input_text", text)}
}

// responsesText is a message's text: as the reference client sends it, a list of one part of
// the kind given (input_text for the user's, output_text for the model's); otherwise a
// string.
func (m *OpenAIResponses) responsesText(kind, text string) any {
	if !m.Reference {
		return text
	}
	return []item{{"type": kind, "text": text}}
}

// reasoningItems returns the reasoning items kept in a reply's Opaque, each as received but
// for its id and status: with store false an id names nothing on the server, and OpenAI's own
// stateless client (Codex) leaves ids out of every item it sends back, as this provider does
// for the function calls.
func reasoningItems(opaque json.RawMessage) []any {
	var kept []map[string]json.RawMessage
	if json.Unmarshal(opaque, &kept) != nil {
		return nil
	}
	out := make([]any, 0, len(kept))
	for _, it := range kept {
		delete(it, "id")
		delete(it, "status")
		out = append(out, it)
	}
	return out
}

// ResponsesFailure reads a failure reported in a 200 answer: an error object, or status
// "failed". Its code decides: server_error and rate_limit_exceeded are retried,
// context_length_exceeded is a context overflow, anything else fails the call.
func ResponsesFailure(answer []byte) *APIError {
	failed := gjson.GetBytes(answer, "error")
	if !failed.IsObject() && gjson.GetBytes(answer, "status").String() != "failed" {
		return nil
	}
	code, message := failed.Get("code").String(), "the response failed"
	if code != "" {
		message += " (" + code + ")"
	}
	if m := failed.Get("message").String(); m != "" {
		message += ": " + m
	}
	return &APIError{Status: http.StatusOK, Code: code, Message: message, billing: billingRefusal(failed)}
}

// ReadResponsesAnswer reads the output items as a reply (responsesAssistant), the usage, and
// whether the response is incomplete.
func ReadResponsesAnswer(answer []byte) (model.Reply, error) {
	output := gjson.GetBytes(answer, "output")
	if !output.IsArray() {
		return model.Reply{}, fmt.Errorf("%w: no output in %.200s", errNoReply, answer)
	}
	out := model.Message{Role: model.RoleAssistant}
	output.ForEach(func(_, it gjson.Result) bool {
		AddResponsesItem(&out, it)
		return true
	})
	usage := ResponsesUsage([]byte(gjson.GetBytes(answer, "usage").Raw))
	// The reference client raises on any incomplete response, whatever its reason
	// (max_output_tokens or content_filter): both count as cut.
	return model.Reply{Message: out, Usage: usage, Cut: gjson.GetBytes(answer, "status").String() == "incomplete"}, nil
}

// AddResponsesItem adds an output item of the model's, of an answer or of a request's input,
// to the assistant message out: a message's text, a function call, a reasoning item (kept
// whole in Opaque, to send back).
func AddResponsesItem(out *model.Message, it gjson.Result) {
	switch it.Get("type").String() {
	case "message", "": // a request's messages may leave their type out
		out.Content = AppendText(out.Content, ItemText(it.Get("content")))
	case "function_call", "custom_tool_call":
		args := it.Get("arguments")
		if !args.Exists() {
			args = it.Get("input")
		}
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: it.Get("call_id").String(), Name: it.Get("name").String(),
			Arguments: argumentsJSON(args)})
	case "reasoning":
		var kept []json.RawMessage
		_ = json.Unmarshal(out.Opaque, &kept) // none kept yet
		out.Opaque, _ = json.Marshal(append(kept, json.RawMessage(it.Raw)))
	}
}

// ItemText is the text of a message item's content: a string, or its parts' texts
// (output_text, input_text, a refusal) one a line.
func ItemText(content gjson.Result) string {
	if content.Type == gjson.String {
		return content.Str
	}
	text := ""
	content.ForEach(func(_, part gjson.Result) bool {
		switch part.Get("type").String() {
		case "output_text", "input_text", "text":
			text = AppendText(text, part.Get("text").String())
		case "refusal":
			text = AppendText(text, part.Get("refusal").String())
		}
		return true
	})
	return text
}
