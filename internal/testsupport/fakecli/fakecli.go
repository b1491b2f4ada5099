// Package fakecli is a scripted model behind the streaming Anthropic Messages, OpenAI
// Responses, OpenAI Chat Completions and Google Gemini protocols, as real CLI agents (Claude
// Code, Codex, opencode, the Gemini CLI) call them, for driving those agents to a graded
// result in tests: its first turn runs Command with the shell tool the request offers, its
// second answers Final. With Web, a turn before those calls the CLI's web tool of that name,
// offered or not (a model asking for what the CLI may have taken away). A call without tools
// (a CLI's title or summary) gets a short text. It needs no state: the turn is read from the
// conversation it is sent.
package fakecli

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/tidwall/gjson"
)

// Script is what every episode's model does.
type Script struct {
	Command string // the shell command of the first turn
	Final   string // the text of the last turn
	// Web, when set, is the name of the CLI's web tool, called with WebArgs on the first turn.
	Web string
}

// WebArgs are the arguments of the web tool's call: a search and a page, whatever the tool.
var WebArgs = map[string]any{"query": "ITBench-AA ground truth", "url": "https://huggingface.co/datasets",
	"prompt": "the answer"}

// step is what a turn does.
type step int

const (
	stepWeb step = iota
	stepShell
	stepAnswer
)

// step is what the turn after calls tool calls of the conversation does.
func (s *Server) step(calls int) step {
	if s.Script.Web != "" {
		if calls == 0 {
			return stepWeb
		}
		calls--
	}
	if calls == 0 {
		return stepShell
	}
	return stepAnswer
}

// webInput is WebArgs as a tool call's JSON arguments.
func webInput() string {
	b, _ := json.Marshal(WebArgs)
	return string(b)
}

// Server answers /v1/messages (Anthropic), /v1/responses and /v1/chat/completions (OpenAI)
// and /v1beta/models/M:METHOD (Gemini) by the script.
type Server struct {
	Script Script
	mu     sync.Mutex
	calls  []Call
}

// Call is one request the server answered.
type Call struct {
	Path   string
	Header http.Header
	Body   []byte
}

// Calls are the requests received, in order.
func (s *Server) Calls() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Call(nil), s.calls...)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil || (r.Method == http.MethodPost && !gjson.ValidBytes(body)) {
		http.Error(w, `{"error":{"message":"bad request body"}}`, http.StatusBadRequest)
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, Call{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
	s.mu.Unlock()
	req := gjson.ParseBytes(body)
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages/count_tokens":
		writeJSON(w, map[string]int{"input_tokens": len(body) / 4})
	case r.Method == http.MethodPost && r.URL.Path == "/v1/messages":
		s.messages(w, req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/responses":
		s.responses(w, req)
	case r.Method == http.MethodPost && r.URL.Path == "/v1/chat/completions":
		s.chat(w, req)
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, geminiModels):
		s.gemini(w, r, req)
	default:
		http.Error(w, `{"error":{"message":"not found"}}`, http.StatusNotFound)
	}
}

// usage is what every answer reports: fixed, so that tests can add it up.
const inputTokens, outputTokens = 1000, 50

// messages answers Anthropic Messages: a tool_use of the Bash tool on the first turn.
func (s *Server) messages(w http.ResponseWriter, req gjson.Result) {
	assistant := 0
	for _, m := range req.Get("messages").Array() {
		if m.Get("role").String() == "assistant" {
			assistant++
		}
	}
	model := req.Get("model").String()
	// Each turn's message has an id of its own: Claude Code takes messages of one id for
	// pieces of one message, and joins them.
	id := fmt.Sprintf("msg_fake%d", assistant)
	var block map[string]any
	stop := "end_turn"
	switch tool := anthropicShell(req); {
	case tool == "" || s.step(assistant) == stepAnswer:
		text := s.Script.Final
		if tool == "" {
			text = "Investigation"
		}
		block = map[string]any{"type": "text", "text": text}
	case s.step(assistant) == stepWeb:
		block = map[string]any{"type": "tool_use", "id": "toolu_fakeweb", "name": s.Script.Web, "input": WebArgs}
		stop = "tool_use"
	default:
		block = map[string]any{"type": "tool_use", "id": "toolu_fake1", "name": tool,
			"input": map[string]any{"command": s.Script.Command, "description": "Investigate"}}
		stop = "tool_use"
	}
	if !req.Get("stream").Bool() {
		writeJSON(w, map[string]any{"id": id, "type": "message", "role": "assistant", "model": model,
			"content": []any{block}, "stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]int{"input_tokens": inputTokens, "output_tokens": outputTokens}})
		return
	}
	sse := newStream(w)
	sse.event("message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": inputTokens, "output_tokens": 1}}})
	if block["type"] == "text" {
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{"type": "text", "text": ""}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "text_delta", "text": block["text"]}})
	} else {
		input, _ := json.Marshal(block["input"])
		sse.event("content_block_start", map[string]any{"type": "content_block_start", "index": 0,
			"content_block": map[string]any{
				"type": "tool_use", "id": block["id"], "name": block["name"], "input": map[string]any{}}})
		sse.event("content_block_delta", map[string]any{"type": "content_block_delta", "index": 0,
			"delta": map[string]any{"type": "input_json_delta", "partial_json": string(input)}})
	}
	sse.event("content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse.event("message_delta",
		map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
			"usage": map[string]int{"output_tokens": outputTokens}})
	sse.event("message_stop", map[string]any{"type": "message_stop"})
}

// anthropicShell is the name of the shell tool a Messages request offers ("" none).
func anthropicShell(req gjson.Result) string {
	for _, t := range req.Get("tools").Array() {
		if t.Get("input_schema.properties.command").Exists() && strings.EqualFold(t.Get("name").String(), "bash") {
			return t.Get("name").String()
		}
	}
	return ""
}

// responses answers the OpenAI Responses API: a function_call of the shell tool on the first
// turn (a request whose input holds no call yet).
func (s *Server) responses(w http.ResponseWriter, req gjson.Result) {
	calls := 0
	for _, item := range req.Get("input").Array() {
		if item.Get("type").String() == "function_call" {
			calls++
		}
	}
	model := req.Get("model").String()
	var item map[string]any
	name, args := responsesShell(req, s.Script.Command)
	switch {
	case name == "" || s.step(calls) == stepAnswer:
		text := s.Script.Final
		if name == "" {
			text = "Investigation"
		}
		item = map[string]any{"id": "msg_fake", "type": "message", "status": "completed", "role": "assistant",
			"content": []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}}
	case s.step(calls) == stepWeb:
		item = map[string]any{"id": "fc_fakeweb", "type": "function_call", "status": "completed", "call_id": "call_fakeweb",
			"name": s.Script.Web, "arguments": webInput()}
	default:
		item = map[string]any{"id": "fc_fake", "type": "function_call", "status": "completed", "call_id": "call_fake1",
			"name": name, "arguments": args}
	}
	response := map[string]any{
		"id":         "resp_fake",
		"object":     "response",
		"created_at": 1,
		"model":      model,
		"status":     "completed",
		"output":     []any{item},
		"usage": map[string]any{"input_tokens": inputTokens, "output_tokens": outputTokens,
			"total_tokens": inputTokens + outputTokens, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens_details": map[string]int{"reasoning_tokens": 0}},
	}
	if !req.Get("stream").Bool() {
		writeJSON(w, response)
		return
	}
	sse := newStream(w)
	started := map[string]any{}
	for k, v := range response {
		started[k] = v
	}
	started["status"], started["output"] = "in_progress", []any{}
	delete(started, "usage")
	sse.event("response.created", map[string]any{"type": "response.created", "response": started})
	sse.event("response.output_item.added",
		map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	if item["type"] == "message" {
		text := item["content"].([]any)[0].(map[string]any)["text"]
		sse.event("response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": "msg_fake",
			"output_index": 0, "content_index": 0, "delta": text})
	}
	sse.event("response.output_item.done",
		map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse.event("response.completed", map[string]any{"type": "response.completed", "response": response})
}

// responsesShell is the shell tool a Responses request offers and the arguments that run
// command with it: Codex's exec_command takes {"cmd"}, its older shell {"command": argv},
// opencode's bash {"command", "description"}.
func responsesShell(req gjson.Result, command string) (name, arguments string) {
	return shellCall(req.Get("tools").Array(), "parameters", command)
}

// shellCall is the shell tool among tools (their JSON schemas under the key schema) and the
// arguments that run command with it ("" when none is offered).
func shellCall(tools []gjson.Result, schema, command string) (name, arguments string) {
	for _, t := range tools {
		props := t.Get(schema + ".properties")
		var args any
		switch {
		case props.Get("cmd").Exists():
			args = map[string]any{"cmd": command}
		case props.Get("command.type").String() == "array":
			args = map[string]any{"command": []string{"bash", "-lc", command}}
		case props.Get("command.type").String() == "string" && strings.EqualFold(t.Get("name").String(), "bash"):
			args = map[string]any{"command": command, "description": "Investigate"}
		default:
			continue
		}
		b, _ := json.Marshal(args)
		return t.Get("name").String(), string(b)
	}
	return "", ""
}

// chat answers OpenAI Chat Completions: a tool call of the shell tool on the first turn (a
// conversation with no assistant message yet), streamed as chunks when asked, the usage in a
// last chunk without choices when stream_options.include_usage asks for it.
func (s *Server) chat(w http.ResponseWriter, req gjson.Result) {
	answered := 0
	for _, m := range req.Get("messages").Array() {
		if m.Get("role").String() == "assistant" {
			answered++
		}
	}
	var functions []gjson.Result
	for _, t := range req.Get("tools").Array() {
		functions = append(functions, t.Get("function"))
	}
	message := map[string]any{"role": "assistant", "content": s.Script.Final}
	finish := "stop"
	switch name, args := shellCall(functions, "parameters", s.Script.Command); {
	case name == "":
		message["content"] = "Investigation"
	case s.step(answered) == stepWeb:
		message["content"] = nil
		message["tool_calls"] = []any{map[string]any{"index": 0, "id": "call_fakeweb", "type": "function",
			"function": map[string]any{"name": s.Script.Web, "arguments": webInput()}}}
		finish = "tool_calls"
	case s.step(answered) == stepShell:
		message["content"] = nil
		message["tool_calls"] = []any{map[string]any{"index": 0, "id": "call_fake1", "type": "function",
			"function": map[string]any{"name": name, "arguments": args}}}
		finish = "tool_calls"
	}
	usage := map[string]int{"prompt_tokens": inputTokens, "completion_tokens": outputTokens,
		"total_tokens": inputTokens + outputTokens}
	chunk := func(choices []any) map[string]any {
		return map[string]any{"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1,
			"model": req.Get("model").String(), "choices": choices}
	}
	if !req.Get("stream").Bool() {
		answer := chunk([]any{map[string]any{"index": 0, "message": message, "finish_reason": finish}})
		answer["object"], answer["usage"] = "chat.completion", usage
		writeJSON(w, answer)
		return
	}
	sse := newStream(w)
	sse.data(chunk([]any{map[string]any{"index": 0, "delta": message, "finish_reason": nil}}))
	sse.data(chunk([]any{map[string]any{"index": 0, "delta": map[string]any{}, "finish_reason": finish}}))
	if req.Get("stream_options.include_usage").Bool() {
		last := chunk([]any{})
		last["usage"] = usage
		sse.data(last)
	}
	fmt.Fprint(sse.w, "data: [DONE]\n\n")
}

// stream writes server-sent events, each flushed as it is written.
type stream struct {
	w     http.ResponseWriter
	f     http.Flusher
	blank string // what ends an event: a blank line, "\n\n" (the Gemini API's is "\r\n\r\n")
}

func newStream(w http.ResponseWriter) *stream {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	return &stream{w: w, f: f, blank: "\n\n"}
}

func (s *stream) event(name string, data any) {
	fmt.Fprintf(s.w, "event: %s\n", name)
	s.data(data)
}

// data writes an event's data line, as Chat Completions and the Gemini API send their chunks
// (no event name).
func (s *stream) data(data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(s.w, "data: %s%s", b, s.blank)
	if s.f != nil {
		s.f.Flush()
	}
}

func writeJSON(w http.ResponseWriter, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(b) // a write that fails is the client's under test to see
}
