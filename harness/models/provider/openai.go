package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// OpenAIChat speaks the Chat Completions API: OpenAI itself, and every OpenAI-compatible
// server (OpenRouter, vLLM, Ollama, LiteLLM, DeepSeek, ...).
type OpenAIChat struct {
	Options
}

// Complete sends the conversation with every tool (tool_choice auto), if there are any.
func (m *OpenAIChat) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	body, err := json.Marshal(m.requestBody(req))
	if err != nil {
		return model.Reply{}, err
	}
	header := http.Header{}
	if m.APIKey != "" {
		header.Set("Authorization", "Bearer "+m.APIKey)
	}
	answer, err := m.post(ctx, m.BaseURL+"/chat/completions", header, body, ChatFailure)
	if err != nil {
		return model.Reply{}, fmt.Errorf("%s: %w", m.Model, err)
	}
	m.noteMissingUsage(ctx, answer, "usage", "prompt_tokens", "completion_tokens")
	return ReadChatAnswer(answer)
}

type chatMessage map[string]any

func (m *OpenAIChat) requestBody(req model.Request) map[string]any {
	messages := make([]chatMessage, 0, len(req.Messages))
	toolNames := map[string]string{} // a call's tool, by the call's id, for its result
	for _, msg := range req.Messages {
		cm := chatMessage{"role": msg.Role, "content": m.chatContent(msg.Content)}
		switch msg.Role {
		case model.RoleTool:
			cm["tool_call_id"] = msg.ToolCallID
			if m.Reference {
				cm["name"] = toolNames[msg.ToolCallID]
			}
		case model.RoleAssistant:
			if len(msg.ToolCalls) > 0 {
				var calls []map[string]any
				for _, c := range msg.ToolCalls {
					calls = append(calls, m.chatToolCall(c))
					toolNames[c.ID] = c.Name
				}
				cm["tool_calls"] = calls
			}
			m.echoReasoning(cm, msg.Opaque)
		}
		messages = append(messages, cm)
	}
	body := map[string]any{"model": m.Model, "messages": messages}
	if len(req.Tools) > 0 { // the API refuses tool_choice without tools (the judge asks with none)
		var tools []map[string]any
		for _, t := range req.Tools {
			tools = append(tools, map[string]any{"type": "function",
				"function": map[string]any{"name": t.Name, "description": t.Description, "parameters": t.Parameters}})
		}
		body["tools"], body["tool_choice"] = tools, "auto"
	}
	if m.MaxTokens > 0 {
		body["max_completion_tokens"] = m.MaxTokens
	}
	if m.ReasoningEffort != "" {
		body["reasoning_effort"] = m.ReasoningEffort
	}
	m.addParams(body, nil, "temperature", "top_p")
	return body
}

// chatContent is a message's text as the request carries it: as the reference client sends
// it, a list of one text part, or "" when there is no text; otherwise a plain string.
func (m *OpenAIChat) chatContent(text string) any {
	if !m.Reference || text == "" {
		return text
	}
	return []map[string]string{{"type": "text", "text": text}}
}

// chatToolCall is one call of an assistant message: the API's fields, and, as the reference
// client sends it, its own record of the call beside them (a signature, null when the provider
// gave none, the name, the arguments and the call's id).
func (m *OpenAIChat) chatToolCall(c model.ToolCall) map[string]any {
	call := map[string]any{"id": c.ID, "type": "function",
		"function": map[string]any{"name": c.Name, "arguments": c.Arguments}}
	if m.Reference {
		call["signature"], call["name"], call["arguments"], call["tool_call_id"] = nil, c.Name, c.Arguments, c.ID
	}
	return call
}

// echoReasoning puts back on an assistant message the reasoning its reply came with, as it
// came: reasoning_content alone when it is not empty, as the reference client does (it keeps
// nothing else), or, without Reference, every field kept.
func (m *OpenAIChat) echoReasoning(cm chatMessage, opaque json.RawMessage) {
	var kept map[string]json.RawMessage
	if json.Unmarshal(opaque, &kept) != nil {
		return
	}
	for k, v := range kept {
		if !m.Reference {
			cm[k] = v
		} else if k == "reasoning_content" && gjson.ParseBytes(v).String() != "" {
			cm[k] = v
		}
	}
}

// ChatFailure finds an error reported inside a 200 answer of a Chat Completions server:
// an error object in place of the reply (OpenRouter sends one when the model fails after it
// started answering) or a choice that finished with "error" (OpenRouter's, with the
// upstream's error object when it has one). Each counts as the status its numeric code
// carries; a failed choice without one as 502, OpenRouter's status for a model that is down
// or answered wrongly; an error object without one as 200, so that its code decides (as on
// the Responses path).
func ChatFailure(answer []byte) *APIError {
	if errObject := gjson.GetBytes(answer, "error"); errObject.IsObject() {
		return inAnswerError(errObject, http.StatusOK, "the server reported an error")
	}
	choice := gjson.GetBytes(answer, "choices.0")
	if choice.Get("finish_reason").String() != "error" && !choice.Get("error").IsObject() {
		return nil
	}
	return inAnswerError(choice.Get("error"), http.StatusBadGateway, "the reply finished with an error")
}

// inAnswerError is the APIError an error object inside a 200 answer stands for: the HTTP
// status of its numeric code (fallback when it has none), its string code, its message (or,
// when it has none, what).
func inAnswerError(errObject gjson.Result, fallback int, what string) *APIError {
	apiErr := &APIError{Status: fallback, Message: errObject.Get("message").String(), billing: billingRefusal(errObject)}
	switch code := errObject.Get("code"); {
	case code.Type == gjson.Number && code.Int() >= 400 && code.Int() <= 599:
		apiErr.Status = int(code.Int())
	case code.Type == gjson.String:
		apiErr.Code = code.Str
	}
	if apiErr.Message == "" {
		apiErr.Message = what
	}
	return apiErr
}

// ReadChatAnswer reads the first choice as a reply (ChatAssistant), the usage, and whether it
// stopped at the output cap.
func ReadChatAnswer(answer []byte) (model.Reply, error) {
	msg := gjson.GetBytes(answer, "choices.0.message")
	if !msg.Exists() {
		return model.Reply{}, fmt.Errorf("%w: no choices[0].message in %.200s", errNoReply, answer)
	}
	usage := ChatUsage([]byte(gjson.GetBytes(answer, "usage").Raw))
	reason := gjson.GetBytes(answer, "choices.0.finish_reason").String()
	return model.Reply{Message: ChatAssistant(msg), Usage: usage, Cut: reason == "length" || reason == "max_tokens"}, nil
}

// ChatAssistant reads an assistant message, of an answer or of a request's history: its text
// (or its refusal), its tool calls, and the reasoning to pass back.
func ChatAssistant(msg gjson.Result) model.Message {
	out := model.Message{Role: model.RoleAssistant, Content: ChatText(msg.Get("content"))}
	// A refusal comes with content null: it is the reply's text, as on the Responses path, so
	// the history shows what the model said instead of an empty reply.
	if refusal := msg.Get("refusal").String(); refusal != "" {
		out.Content = AppendText(out.Content, refusal)
	}
	msg.Get("tool_calls").ForEach(func(_, c gjson.Result) bool {
		out.ToolCalls = append(out.ToolCalls, model.ToolCall{ID: c.Get("id").String(), Name: c.Get("function.name").String(),
			Arguments: argumentsJSON(c.Get("function.arguments"))})
		return true
	})
	extra := map[string]json.RawMessage{}
	for _, field := range []string{"reasoning_content", "reasoning", "reasoning_details"} {
		if v := msg.Get(field); v.Exists() && v.Type != gjson.Null {
			extra[field] = json.RawMessage(v.Raw)
		}
	}
	if len(extra) > 0 {
		out.Opaque, _ = json.Marshal(extra)
	}
	return out
}

// argumentsJSON returns tool arguments as the model wrote them: the API sends them as a JSON
// string, which may not hold valid JSON (the loop then answers with a tool error).
func argumentsJSON(v gjson.Result) string {
	if v.Type == gjson.String {
		return v.Str
	}
	return v.Raw
}
