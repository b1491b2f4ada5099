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

// AnthropicVersion is the Messages API version sent with every request.
const AnthropicVersion = "2023-06-01"

// defaultAnthropicMaxTokens is used when no --max-tokens is given (the API requires one).
const defaultAnthropicMaxTokens = 32000

// Anthropic speaks the Messages API: tool_use and tool_result blocks, adaptive thinking with
// an effort, thinking blocks and their signatures passed back unchanged, and prompt caching of
// the stable prefix (the system prompt and the tools). With Reference it sends what Stirrup's
// LiteLLM client does through LiteLLM 1.80.9 (docs/fidelity.md): no cache marks, tool schemas
// cut to the keys LiteLLM keeps, tool results as text parts without is_error, a reply sent
// back as its text in one block and then its calls, the effort as LiteLLM maps it.
type Anthropic struct {
	Options
}

// Complete sends the conversation with every tool (tool_choice auto), if there are any.
func (m *Anthropic) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	body, err := json.Marshal(m.requestBody(req))
	if err != nil {
		return model.Reply{}, err
	}
	header := http.Header{}
	header.Set("x-api-key", m.APIKey)
	header.Set("anthropic-version", AnthropicVersion)
	header.Set("accept", "application/json") // as LiteLLM's get_anthropic_headers
	if beta := m.effort().beta; beta != "" {
		header.Set("anthropic-beta", beta)
	}
	answer, err := m.post(ctx, m.BaseURL+"/v1/messages", header, body, AnthropicFailure)
	if err != nil {
		return model.Reply{}, fmt.Errorf("%s: %w", m.Model, err)
	}
	m.noteMissingUsage(ctx, answer, "usage", "input_tokens", "output_tokens")
	return ReadAnthropicAnswer(answer)
}

// block is a content block, a system block or a tool built here; blocks of the model's own
// go back as json.RawMessage, exactly as received.
type block = map[string]any

func (m *Anthropic) requestBody(req model.Request) map[string]any {
	var system []block
	conv := alternating{field: "content"}
	add := conv.add
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			if msg.Content != "" { // the API refuses an empty text block; LiteLLM leaves it out
				system = append(system, block{"type": "text", "text": msg.Content})
			}
		case model.RoleTool:
			add("user", m.toolResult(msg))
		case model.RoleAssistant:
			if blocks := m.assistantContent(msg); len(blocks) > 0 {
				add("assistant", blocks...)
			}
		default:
			add("user", block{"type": "text", "text": msg.Content})
		}
	}
	messages := conv.turns
	var tools []block
	for _, t := range req.Tools {
		tools = append(tools,
			block{"name": t.Name, "description": t.Description, "input_schema": m.inputSchema(t.Parameters)})
	}
	if !m.Reference { // LiteLLM marks nothing for caching unless asked
		markCacheBreakpoints(system, messages, tools)
	}
	maxTokens := m.MaxTokens
	if maxTokens <= 0 {
		maxTokens = defaultAnthropicMaxTokens
	}
	body := map[string]any{"model": m.Model, "max_tokens": maxTokens, "messages": messages}
	if len(system) > 0 {
		body["system"] = system
	}
	if len(tools) > 0 { // the API refuses tool_choice without tools (the judge asks with none)
		body["tools"], body["tool_choice"] = tools, block{"type": "auto"}
	}
	for k, v := range m.effort().body {
		body[k] = v
	}
	m.addParams(body, nil, "temperature", "top_p")
	return body
}

// alternating is the turns of a conversation a request builds, each a role and a list (of
// blocks, of parts) under field.
type alternating struct {
	field string
	turns []map[string]any
}

// add appends items to the conversation, merging them into the last turn when it has the
// same role: the APIs want user and model turns to alternate, the results of one reply's calls
// in one turn.
func (a *alternating) add(role string, items ...any) {
	if n := len(a.turns); n > 0 && a.turns[n-1]["role"] == role {
		a.turns[n-1][a.field] = append(a.turns[n-1][a.field].([]any), items...)
		return
	}
	a.turns = append(a.turns, map[string]any{"role": role, a.field: items})
}

// markCacheBreakpoints sets 3 of the 4 cache breakpoints allowed: the tools, the system
// prompt, and the end of the conversation so far, so each call reads every earlier turn from
// the cache and pays full price only for the newest messages.
func markCacheBreakpoints(system []block, messages []map[string]any, tools []block) {
	if len(system) > 0 {
		system[len(system)-1]["cache_control"] = block{"type": "ephemeral"}
	}
	if n := len(messages); n > 0 {
		blocks := messages[n-1]["content"].([]any)
		if last, ok := blocks[len(blocks)-1].(block); ok { // the model's own blocks go back untouched
			last["cache_control"] = block{"type": "ephemeral"}
		}
	}
	if len(tools) > 0 {
		tools[len(tools)-1]["cache_control"] = block{"type": "ephemeral"}
	}
}

// litellmSchemaKeys are the keys of a tool's schema LiteLLM passes on to the Messages API (its
// AnthropicInputSchema); the rest, pydantic's title and description among them, it drops.
var litellmSchemaKeys = []string{"type", "properties", "required", "additionalProperties", "$defs", "strict"}

// inputSchema is a tool's input_schema: its JSON schema, with Reference only the keys LiteLLM
// passes on.
func (m *Anthropic) inputSchema(schema json.RawMessage) any {
	if !m.Reference {
		return schema
	}
	kept := block{}
	for _, key := range litellmSchemaKeys {
		if v := gjson.GetBytes(schema, key); v.Exists() {
			kept[key] = json.RawMessage(v.Raw)
		}
	}
	return kept
}

// toolResult is a tool message as a tool_result block. With Reference it is what LiteLLM
// 1.80.9's convert_to_anthropic_tool_result makes of the reference client's tool message: its
// text a list of one text part ("" for none) whose cache_control is null (the key is built
// from the message's part, which has none, and posted as it is), and no is_error (the
// message carries no error flag).
func (m *Anthropic) toolResult(msg model.Message) block {
	if !m.Reference {
		return block{"type": "tool_result", "tool_use_id": msg.ToolCallID, "content": msg.Content, "is_error": msg.IsError}
	}
	var content any = ""
	if msg.Content != "" {
		content = []any{block{"type": "text", "text": msg.Content, "cache_control": nil}}
	}
	return block{"type": "tool_result", "tool_use_id": msg.ToolCallID, "content": content}
}

// assistantContent is an assistant message's content for the API; none leaves the message out.
// With Reference and no thinking in the reply it is what LiteLLM makes of the reference
// client's message: the reply's text blocks joined into one (LiteLLM's reply has one text),
// then its calls; LiteLLM sends nothing for a message with neither, and keeps a text of white
// space alone (anthropic_messages_pt tests len(text) > 0), which the API refuses with a 400,
// as it refused the reference client's request. The reference client never
// sends thinking back (it reads the signature under a key LiteLLM does not use), which the API
// refuses once thinking is on; a reply with thinking therefore goes back whole, as received.
func (m *Anthropic) assistantContent(msg model.Message) []any {
	if !m.Reference || hasThinking(msg.Opaque) {
		return keptContent(msg)
	}
	text := msg.Content
	if kept := gjson.ParseBytes(msg.Opaque); kept.IsArray() {
		text = ""
		for _, b := range kept.Array() {
			if b.Get("type").String() == "text" {
				text += b.Get("text").String()
			}
		}
	}
	var blocks []any
	if text != "" {
		blocks = append(blocks, block{"type": "text", "text": text})
	}
	for _, c := range msg.ToolCalls {
		blocks = append(blocks, toolUse(c))
	}
	return blocks
}

// hasThinking reports a reply whose content blocks hold thinking.
func hasThinking(opaque json.RawMessage) bool {
	var kept []json.RawMessage
	_ = json.Unmarshal(opaque, &kept) // nothing kept: no thinking
	for _, raw := range kept {
		if isThinking(raw) {
			return true
		}
	}
	return false
}

// noAnswer stands in for the text of a reply with no text and no call: the API refuses an
// assistant message that is empty or ends with a thinking block.
const noAnswer = "(no answer)"

// keptContent is an assistant message's content for the API. A reply of this provider
// keeps its content blocks in Opaque, and they go back in the order received, as the API
// asks: thinking blocks first and unchanged (signatures included), text and tool calls
// interleaved as the model wrote them. Blank text blocks are left out: the API refuses them.
// What Opaque does not hold (a message from elsewhere, or a reply recorded when Opaque kept
// only the thinking blocks) is built from the message: its text, then its calls.
func keptContent(msg model.Message) []any {
	var kept []json.RawMessage
	_ = json.Unmarshal(msg.Opaque, &kept) // nothing kept: the message alone says it all
	var blocks []any
	hasText, hasCall := false, map[string]bool{}
	for _, raw := range kept {
		b := gjson.ParseBytes(raw)
		switch b.Get("type").String() {
		case "text":
			hasText = true
			if isBlank(b.Get("text").String()) {
				continue
			}
		case "tool_use":
			hasCall[b.Get("id").String()] = true
		}
		blocks = append(blocks, raw)
	}
	if !hasText && !isBlank(msg.Content) {
		blocks = append(blocks, block{"type": "text", "text": msg.Content})
	}
	for _, c := range msg.ToolCalls {
		if !hasCall[c.ID] {
			blocks = append(blocks, toolUse(c))
		}
	}
	if len(blocks) == 0 || isThinking(blocks[len(blocks)-1]) {
		blocks = append(blocks, block{"type": "text", "text": noAnswer})
	}
	return blocks
}

// toolUse is the tool_use block of a call: its arguments as the model wrote them, or {} when
// they are not a JSON object (the loop already refused the call).
func toolUse(c model.ToolCall) block {
	input := json.RawMessage(c.Arguments)
	if !gjson.Valid(c.Arguments) || !gjson.Parse(c.Arguments).IsObject() {
		input = json.RawMessage(`{}`)
	}
	return block{"type": "tool_use", "id": c.ID, "name": c.Name, "input": input}
}

// isThinking reports a block of the model's own thinking.
func isThinking(b any) bool {
	raw, ok := b.(json.RawMessage)
	if !ok {
		return false
	}
	kind := gjson.GetBytes(raw, "type").String()
	return kind == "thinking" || kind == "redacted_thinking"
}

// isBlank reports text with nothing but white space, which the API refuses as a text block.
func isBlank(text string) bool { return strings.TrimSpace(text) == "" }

// anthropicErrorStatus is the HTTP status of each error type of the Messages API, as its
// errors page lists them.
var anthropicErrorStatus = map[string]int{
	"invalid_request_error": http.StatusBadRequest, "authentication_error": http.StatusUnauthorized,
	"billing_error": http.StatusPaymentRequired, "permission_error": http.StatusForbidden,
	"not_found_error": http.StatusNotFound, "request_too_large": http.StatusRequestEntityTooLarge,
	"rate_limit_error": http.StatusTooManyRequests, "api_error": http.StatusInternalServerError,
	"timeout_error": http.StatusGatewayTimeout, "overloaded_error": 529,
}

// AnthropicFailure finds an error answer ({"type": "error"}) that came with status 200: it
// counts as the status of its error type, so that api_error and overloaded_error are retried
// as a 500 and a 529 are, and invalid_request_error fails at once as a 400 does. A type the
// API adds later counts as api_error, the API's own type for the unexpected.
func AnthropicFailure(answer []byte) *APIError {
	if gjson.GetBytes(answer, "type").String() != "error" {
		return nil
	}
	errObject := gjson.GetBytes(answer, "error")
	status, ok := anthropicErrorStatus[errObject.Get("type").String()]
	if !ok {
		status = http.StatusInternalServerError
	}
	return &APIError{Status: status, Message: errorMessage(answer) + " (" + errObject.Get("type").String() + ")",
		billing: billingRefusal(errObject)}
}

// ReadAnthropicAnswer reads a Messages answer: its content as a reply (AnthropicAssistant),
// the usage, and whether it stopped at the output cap.
func ReadAnthropicAnswer(answer []byte) (model.Reply, error) {
	content := gjson.GetBytes(answer, "content")
	if !content.IsArray() {
		return model.Reply{}, fmt.Errorf("%w: no content in %.200s", errNoReply, answer)
	}
	usage := AnthropicUsage([]byte(gjson.GetBytes(answer, "usage").Raw))
	return model.Reply{Message: AnthropicAssistant(content), Usage: usage,
		Cut: gjson.GetBytes(answer, "stop_reason").String() == "max_tokens"}, nil
}

// AnthropicAssistant reads an assistant's content blocks, of an answer or of a request's
// history: the text (blank blocks left out), the tool_use blocks, and the blocks as received
// (kept whole in Opaque, to send back in order).
func AnthropicAssistant(content gjson.Result) model.Message {
	out := model.Message{Role: model.RoleAssistant}
	if content.Type == gjson.String {
		out.Content = content.Str
		return out
	}
	content.ForEach(func(_, b gjson.Result) bool {
		switch b.Get("type").String() {
		case "text":
			if text := b.Get("text").String(); !isBlank(text) {
				out.Content = AppendText(out.Content, text)
			}
		case "tool_use":
			out.ToolCalls = append(out.ToolCalls,
				model.ToolCall{ID: b.Get("id").String(), Name: b.Get("name").String(), Arguments: b.Get("input").Raw})
		}
		return true
	})
	if len(content.Array()) > 0 {
		out.Opaque = json.RawMessage(content.Raw)
	}
	return out
}
