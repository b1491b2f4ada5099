package model

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness"
)

// AnthropicVersion is the Messages API version sent with every request.
const AnthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is used when no --max-tokens is given (the API requires one).
const defaultAnthropicMaxTokens = 32000

// Anthropic speaks the Messages API: tool_use and tool_result blocks, adaptive thinking with
// an effort (or a fixed thinking budget for older models), thinking blocks and their
// signatures passed back unchanged, and prompt caching of the stable prefix (the system
// prompt and the tools).
type Anthropic struct {
	Options
	ThinkingBudget int // > 0: extended thinking with this budget instead of adaptive thinking
}

// Complete sends the conversation with every tool (tool_choice auto), if there are any.
func (m *Anthropic) Complete(ctx context.Context, req harness.Request) (harness.Reply, error) {
	body, err := json.Marshal(m.requestBody(req))
	if err != nil {
		return harness.Reply{}, err
	}
	header := http.Header{}
	header.Set("x-api-key", m.APIKey)
	header.Set("anthropic-version", AnthropicVersion)
	answer, err := m.post(ctx, m.BaseURL+"/v1/messages", header, body, nil)
	if err != nil {
		return harness.Reply{}, fmt.Errorf("%s: %w", m.Model, err)
	}
	return parseAnthropicAnswer(answer)
}

type block = map[string]any

func (m *Anthropic) requestBody(req harness.Request) map[string]any {
	var system []block
	var messages []map[string]any
	// add appends blocks to the conversation, merging them into the last message when it has
	// the same role: the API wants user and assistant turns to alternate.
	add := func(role string, blocks ...block) {
		if n := len(messages); n > 0 && messages[n-1]["role"] == role {
			messages[n-1]["content"] = append(messages[n-1]["content"].([]block), blocks...)
			return
		}
		messages = append(messages, map[string]any{"role": role, "content": blocks})
	}
	for _, msg := range req.Messages {
		switch msg.Role {
		case harness.RoleSystem:
			system = append(system, block{"type": "text", "text": msg.Content})
		case harness.RoleTool:
			add("user", block{"type": "tool_result", "tool_use_id": msg.ToolCallID, "content": msg.Content, "is_error": msg.IsError})
		case harness.RoleAssistant:
			var blocks []block
			var thinking []json.RawMessage
			if json.Unmarshal(msg.Opaque, &thinking) == nil {
				for _, t := range thinking { // thinking blocks, signatures included, exactly as received
					var b block
					if json.Unmarshal(t, &b) == nil {
						blocks = append(blocks, b)
					}
				}
			}
			if msg.Content != "" {
				blocks = append(blocks, block{"type": "text", "text": msg.Content})
			}
			for _, c := range msg.ToolCalls {
				var input any = map[string]any{}
				if json.Unmarshal([]byte(c.Arguments), &input) != nil {
					input = map[string]any{} // the model's invalid arguments: the loop already refused the call
				}
				blocks = append(blocks, block{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input})
			}
			if len(blocks) == 0 {
				blocks = append(blocks, block{"type": "text", "text": "(no answer)"})
			}
			add("assistant", blocks...)
		default:
			add("user", block{"type": "text", "text": msg.Content})
		}
	}
	// Cache breakpoints (3 of the 4 allowed): the tools, the system prompt, and the end of the
	// conversation so far, so each call reads every earlier turn from the cache and pays full
	// price only for the newest messages.
	if len(system) > 0 {
		system[len(system)-1]["cache_control"] = block{"type": "ephemeral"}
	}
	if n := len(messages); n > 0 {
		blocks := messages[n-1]["content"].([]block)
		if last := blocks[len(blocks)-1]; last["type"] != "thinking" && last["type"] != "redacted_thinking" { // those go back untouched
			last["cache_control"] = block{"type": "ephemeral"}
		}
	}
	var tools []block
	for _, t := range req.Tools {
		tools = append(tools, block{"name": t.Name, "description": t.Description, "input_schema": t.Parameters})
	}
	if len(tools) > 0 {
		tools[len(tools)-1]["cache_control"] = block{"type": "ephemeral"}
	}
	maxTokens := m.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	body := map[string]any{"model": m.Model, "max_tokens": maxTokens, "system": system, "messages": messages}
	if len(tools) > 0 { // the API refuses tool_choice without tools (the judge asks with none)
		body["tools"], body["tool_choice"] = tools, block{"type": "auto"}
	}
	switch {
	case m.ThinkingBudget > 0:
		body["thinking"] = block{"type": "enabled", "budget_tokens": m.ThinkingBudget}
	case m.ReasoningEffort != "":
		body["thinking"] = block{"type": "adaptive"}
		body["output_config"] = block{"effort": m.ReasoningEffort}
	}
	return body
}

// parseAnthropicAnswer reads text, tool_use blocks, thinking blocks (kept whole, to pass
// back) and the usage.
func parseAnthropicAnswer(answer []byte) (harness.Reply, error) {
	content := gjson.GetBytes(answer, "content")
	if !content.IsArray() {
		return harness.Reply{}, fmt.Errorf("%w: no content in %.200s", errMalformed, answer)
	}
	out := harness.Message{Role: harness.RoleAssistant}
	var thinking []json.RawMessage
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "text":
			if out.Content != "" {
				out.Content += "\n"
			}
			out.Content += b.Get("text").String()
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls, harness.ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Arguments: b.Get("input").Raw})
		case "thinking", "redacted_thinking":
			thinking = append(thinking, json.RawMessage(b.Raw))
		}
		return true
	})
	if len(thinking) > 0 {
		out.Opaque, _ = json.Marshal(thinking)
	}
	u := gjson.GetBytes(answer, "usage")
	read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	usage := harness.Usage{Input: u.Get("input_tokens").Int() + read + write, CachedRead: read, CachedWrite: write, Output: u.Get("output_tokens").Int()}
	return harness.Reply{Message: out, Usage: usage}, nil
}
