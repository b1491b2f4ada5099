// The three APIs' requests and streamed answers read back into the vocabulary: what an agent
// sends a provider through the gateway becomes the Request and Reply of a turn, as the
// providers (harness/models/provider) write and read them for the loop. Only the gateway reads
// requests, so their readers are here; an assistant message of the history reads as the
// provider reads its answer (provider.ChatAssistant and the like).

package gateway

import (
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// readChatRequest reads a Chat Completions request: its messages (system and developer ones
// as system messages) and its function tools.
func readChatRequest(body []byte) (model.Request, error) {
	messages := gjson.GetBytes(body, "messages")
	if !messages.IsArray() {
		return model.Request{}, fmt.Errorf("a Chat Completions request with no messages array")
	}
	var req model.Request
	messages.ForEach(func(_, m gjson.Result) bool {
		switch role := m.Get("role").String(); role {
		case model.RoleAssistant:
			req.Messages = append(req.Messages, provider.ChatAssistant(m))
		case model.RoleTool:
			req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: m.Get("tool_call_id").String(),
				Content: provider.ChatText(m.Get("content"))})
		default:
			req.Messages = append(req.Messages, model.Message{Role: neutralRole(role),
				Content: provider.ChatText(m.Get("content"))})
		}
		return true
	})
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if f := t.Get("function"); f.Exists() {
			req.Tools = append(req.Tools, model.Tool{Name: f.Get("name").String(), Description: f.Get("description").String(),
				Parameters: rawOrNil(f.Get("parameters"))})
		}
		return true
	})
	return req, nil
}

// readResponsesRequest reads a Responses API request: its instructions as a system message,
// then its input (a string, or items: messages, the model's reasoning, function calls and
// message items in a row making one assistant message, and function call outputs), and its
// tools.
func readResponsesRequest(body []byte) (model.Request, error) {
	var req model.Request
	if instructions := gjson.GetBytes(body, "instructions").String(); instructions != "" {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: instructions})
	}
	input := gjson.GetBytes(body, "input")
	switch {
	case input.Type == gjson.String:
		req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: input.Str})
	case input.IsArray():
		input.ForEach(func(_, it gjson.Result) bool {
			req.Messages = addInputItem(req.Messages, it)
			return true
		})
	default:
		return model.Request{}, fmt.Errorf("a Responses request with no input")
	}
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		if name := t.Get("name").String(); name != "" {
			req.Tools = append(req.Tools, model.Tool{Name: name, Description: t.Get("description").String(),
				Parameters: rawOrNil(t.Get("parameters"))})
		}
		return true
	})
	return req, nil
}

// addInputItem adds one input item to messages. The items of one reply (reasoning, then its
// message and calls) join one assistant message, as the reply was read; a reasoning item after
// text or calls begins the next reply.
func addInputItem(messages []model.Message, it gjson.Result) []model.Message {
	kind, role := it.Get("type").String(), it.Get("role").String()
	last := len(messages) - 1
	switch {
	case kind == "function_call_output" || kind == "custom_tool_call_output":
		return append(messages, model.Message{Role: model.RoleTool, ToolCallID: it.Get("call_id").String(),
			Content: provider.ItemText(it.Get("output"))})
	case kind == "reasoning" || kind == "function_call" || kind == "custom_tool_call" || role == model.RoleAssistant:
		startsReply := kind == "reasoning" && last >= 0 &&
			(messages[last].Content != "" || len(messages[last].ToolCalls) > 0)
		if last < 0 || messages[last].Role != model.RoleAssistant || startsReply {
			messages = append(messages, model.Message{Role: model.RoleAssistant})
		}
		provider.AddResponsesItem(&messages[len(messages)-1], it)
		return messages
	case kind == "message" || (kind == "" && role != ""):
		return append(messages, model.Message{Role: neutralRole(role), Content: provider.ItemText(it.Get("content"))})
	}
	return messages // an item of a built-in tool's, which no turn shows
}

// readAnthropicRequest reads a Messages request: its system blocks as system messages, then
// its messages (a user's tool_result blocks as tool messages, its text as a user message; an
// assistant's blocks as one message, as an answer's are read), and its tools.
func readAnthropicRequest(body []byte) (model.Request, error) {
	messages := gjson.GetBytes(body, "messages")
	if !messages.IsArray() {
		return model.Request{}, fmt.Errorf("a Messages request with no messages array")
	}
	var req model.Request
	system := gjson.GetBytes(body, "system")
	if system.Type == gjson.String {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: system.Str})
	}
	if system.IsArray() {
		system.ForEach(func(_, b gjson.Result) bool {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: b.Get("text").String()})
			return true
		})
	}
	messages.ForEach(func(_, m gjson.Result) bool {
		content := m.Get("content")
		if m.Get("role").String() == model.RoleAssistant {
			req.Messages = append(req.Messages, provider.AnthropicAssistant(content))
			return true
		}
		if content.Type == gjson.String {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: content.Str})
			return true
		}
		text := ""
		content.ForEach(func(_, b gjson.Result) bool {
			switch b.Get("type").String() {
			case "tool_result":
				req.Messages = append(req.Messages, model.Message{Role: model.RoleTool, ToolCallID: b.Get("tool_use_id").String(),
					Content: provider.BlocksText(b.Get("content")), IsError: b.Get("is_error").Bool()})
			case "text":
				text = provider.AppendText(text, b.Get("text").String())
			}
			return true
		})
		if text != "" {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: text})
		}
		return true
	})
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		req.Tools = append(req.Tools, model.Tool{Name: t.Get("name").String(), Description: t.Get("description").String(),
			Parameters: rawOrNil(t.Get("input_schema"))})
		return true
	})
	return req, nil
}

// neutralRole is the vocabulary's role of a role a request names: OpenAI's developer messages
// are system ones.
func neutralRole(role string) string {
	switch role {
	case "developer", model.RoleSystem:
		return model.RoleSystem
	case model.RoleAssistant:
		return model.RoleAssistant
	}
	return model.RoleUser
}

func rawOrNil(v gjson.Result) json.RawMessage {
	if !v.Exists() {
		return nil
	}
	return json.RawMessage(v.Raw)
}

// A streamAnswer puts a streamed answer back together, event by event, as the answer the same
// call would have had unstreamed, so that it is read as one (provider.ReadChatAnswer and the
// like), its usage included.
type streamAnswer interface {
	// Add takes one event's data (a server-sent event's data lines, joined).
	Add(data []byte)
	// Answer is the answer so far, as JSON.
	Answer() []byte
	// Ended reports that the stream's last event came (or an error event).
	Ended() bool
}

// budget bounds what a stream's answer keeps, as provider.MaxResponseBytes bounds an answer:
// an endless stream cannot take all memory; what comes past the bound is left out.
type budget struct{ kept int }

// take is text, when it fits in what is left; "" otherwise.
func (b *budget) take(text string) string {
	if b.kept+len(text) > provider.MaxResponseBytes {
		return ""
	}
	b.kept += len(text)
	return text
}

// newChatStream assembles Chat Completions chunks: the first choice's deltas (text, reasoning,
// tool calls whose arguments come in pieces), its finish reason, and the usage chunk;
// [DONE] ends it.
func newChatStream() streamAnswer { return &chatStream{} }

type chatStream struct {
	budget
	content, reasoning strings.Builder
	reasoningField     string
	calls              []chatCallDelta
	finish             string
	usage              json.RawMessage
	ended              bool
}

type chatCallDelta struct {
	id, name  string
	arguments strings.Builder
}

func (s *chatStream) Add(data []byte) {
	if strings.TrimSpace(string(data)) == "[DONE]" {
		s.ended = true
		return
	}
	if !gjson.ValidBytes(data) {
		return // a comment or a keep-alive
	}
	chunk := gjson.ParseBytes(data)
	if u := chunk.Get("usage"); u.IsObject() {
		s.usage = json.RawMessage(u.Raw)
	}
	chunk.Get("choices").ForEach(func(_, c gjson.Result) bool {
		if c.Get("index").Int() != 0 {
			return true
		}
		d := c.Get("delta")
		s.content.WriteString(s.take(d.Get("content").String()))
		s.content.WriteString(s.take(d.Get("refusal").String()))
		for _, field := range []string{"reasoning_content", "reasoning"} {
			if r := d.Get(field); r.Type == gjson.String {
				s.reasoningField = field
				s.reasoning.WriteString(s.take(r.Str))
			}
		}
		d.Get("tool_calls").ForEach(func(_, tc gjson.Result) bool {
			i := int(tc.Get("index").Int())
			for len(s.calls) <= i {
				s.calls = append(s.calls, chatCallDelta{})
			}
			call := &s.calls[i]
			if id := tc.Get("id").String(); id != "" {
				call.id = id
			}
			if name := tc.Get("function.name").String(); name != "" {
				call.name = name
			}
			call.arguments.WriteString(s.take(tc.Get("function.arguments").String()))
			return true
		})
		if f := c.Get("finish_reason").String(); f != "" {
			s.finish = f
		}
		return true
	})
}

func (s *chatStream) Answer() []byte {
	msg := map[string]any{"role": model.RoleAssistant, "content": s.content.String()}
	if s.reasoningField != "" {
		msg[s.reasoningField] = s.reasoning.String()
	}
	if len(s.calls) > 0 {
		calls := make([]map[string]any, len(s.calls))
		for i := range s.calls {
			c := &s.calls[i]
			calls[i] = map[string]any{"id": c.id, "type": "function",
				"function": map[string]any{"name": c.name, "arguments": c.arguments.String()}}
		}
		msg["tool_calls"] = calls
	}
	answer := map[string]any{"object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": s.finish}}}
	if s.usage != nil {
		answer["usage"] = s.usage
	}
	b, _ := json.Marshal(answer) // strings, and raw JSON gjson found valid
	return b
}

func (s *chatStream) Ended() bool { return s.ended }

// newResponsesStream assembles Responses API events: the response of response.completed
// (or incomplete, or failed), which holds the whole answer; until then the output items
// done so far.
func newResponsesStream() streamAnswer { return &responsesStream{} }

type responsesStream struct {
	budget
	items    []json.RawMessage
	response json.RawMessage
	ended    bool
}

func (s *responsesStream) Add(data []byte) {
	if !gjson.ValidBytes(data) {
		return
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "response.output_item.done":
		if item := ev.Get("item").Raw; s.take(item) != "" {
			s.items = append(s.items, json.RawMessage(item))
		}
	case "response.completed", "response.incomplete", "response.failed":
		s.ended = true
		if r := ev.Get("response"); r.IsObject() {
			s.response = json.RawMessage(r.Raw)
		}
	case "error":
		s.ended = true
	}
}

func (s *responsesStream) Answer() []byte {
	// The final response holds its output; a server that sends it empty has sent the items.
	if s.response != nil && len(gjson.GetBytes(s.response, "output").Array()) > 0 {
		return s.response
	}
	answer := map[string]json.RawMessage{}
	_ = json.Unmarshal(s.response, &answer) // none yet: the items alone
	items := s.items
	if items == nil {
		items = []json.RawMessage{}
	}
	answer["output"], _ = json.Marshal(items)
	b, _ := json.Marshal(answer) // raw JSON gjson found valid
	return b
}

func (s *responsesStream) Ended() bool { return s.ended }

// newAnthropicStream assembles Messages events: message_start's message, each content block
// from content_block_start with its deltas (text, thinking and its signature, a tool_use's
// input JSON in pieces), message_delta's stop reason and usage (totals so far, which update
// message_start's); message_stop, or an error event, ends it.
func newAnthropicStream() streamAnswer { return &anthropicStream{} }

type anthropicStream struct {
	budget
	message map[string]json.RawMessage
	usage   map[string]json.RawMessage
	blocks  []anthropicBlock
	ended   bool
}

// anthropicBlock is a content block as it comes: content_block_start's fields, then its
// deltas, kept apart until the answer is asked for (joining them as they come would copy the
// block's text at every delta).
type anthropicBlock struct {
	start  map[string]json.RawMessage
	deltas map[string]*strings.Builder // text, thinking, signature, and a tool_use's input JSON
}

func (b *anthropicBlock) add(field, text string) {
	if b.deltas == nil {
		b.deltas = map[string]*strings.Builder{}
	}
	if b.deltas[field] == nil {
		b.deltas[field] = &strings.Builder{}
	}
	b.deltas[field].WriteString(text)
}

// fields are the block's fields with its deltas joined: a string field's text after the
// start's, and the input of a tool_use as its JSON (as the text that came, when it was cut
// short).
func (b *anthropicBlock) fields() map[string]json.RawMessage {
	out := maps.Clone(b.start)
	if out == nil {
		out = map[string]json.RawMessage{}
	}
	for field, d := range b.deltas {
		if field == "input" {
			input := json.RawMessage(d.String())
			if !json.Valid(input) {
				input, _ = json.Marshal(d.String())
			}
			out[field] = input
			continue
		}
		var started string
		_ = json.Unmarshal(out[field], &started) // none: ""
		out[field], _ = json.Marshal(started + d.String())
	}
	return out
}

func (s *anthropicStream) Add(data []byte) {
	if !gjson.ValidBytes(data) {
		return
	}
	ev := gjson.ParseBytes(data)
	switch ev.Get("type").String() {
	case "message_start":
		s.message = map[string]json.RawMessage{}
		_ = json.Unmarshal([]byte(ev.Get("message").Raw), &s.message) // not an object: an empty message
		s.usage = map[string]json.RawMessage{}
		_ = json.Unmarshal(s.message["usage"], &s.usage) // none: counts to come
	case "content_block_start":
		i := int(ev.Get("index").Int())
		for len(s.blocks) <= i {
			s.blocks = append(s.blocks, anthropicBlock{})
		}
		s.blocks[i] = anthropicBlock{}
		_ = json.Unmarshal([]byte(ev.Get("content_block").Raw), &s.blocks[i].start) // not an object: an empty block
	case "content_block_delta":
		i := int(ev.Get("index").Int())
		if i < 0 || i >= len(s.blocks) {
			return
		}
		d := ev.Get("delta")
		switch d.Get("type").String() {
		case "text_delta":
			s.blocks[i].add("text", s.take(d.Get("text").String()))
		case "thinking_delta":
			s.blocks[i].add("thinking", s.take(d.Get("thinking").String()))
		case "signature_delta":
			s.blocks[i].add("signature", s.take(d.Get("signature").String()))
		case "input_json_delta":
			s.blocks[i].add("input", s.take(d.Get("partial_json").String()))
		}
	case "message_delta":
		if s.message == nil {
			s.message = map[string]json.RawMessage{}
		}
		ev.Get("delta").ForEach(func(k, v gjson.Result) bool {
			s.message[k.String()] = json.RawMessage(v.Raw)
			return true
		})
		if s.usage == nil {
			s.usage = map[string]json.RawMessage{}
		}
		ev.Get("usage").ForEach(func(k, v gjson.Result) bool {
			if v.Type != gjson.Null {
				s.usage[k.String()] = json.RawMessage(v.Raw)
			}
			return true
		})
	case "message_stop", "error":
		s.ended = true
	}
}

func (s *anthropicStream) Answer() []byte {
	answer := maps.Clone(s.message)
	if answer == nil {
		answer = map[string]json.RawMessage{}
	}
	blocks := make([]map[string]json.RawMessage, len(s.blocks))
	for i := range s.blocks {
		blocks[i] = s.blocks[i].fields()
	}
	answer["content"], _ = json.Marshal(blocks)
	if s.usage != nil {
		answer["usage"], _ = json.Marshal(s.usage)
	}
	b, _ := json.Marshal(answer) // raw JSON gjson found valid
	return b
}

func (s *anthropicStream) Ended() bool { return s.ended }
