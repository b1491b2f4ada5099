// The Gemini API's requests and streamed answers read back into the vocabulary, as wire.go
// reads the other three APIs'.

package gateway

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// readGeminiRequest reads a generateContent request: its systemInstruction's parts as a system
// message, then its contents (a model content as one assistant message, as an answer's is
// read; a user content's functionResponse parts as tool messages, each answering the call of
// the previous model content whose id it names, else the one in its place; its text as a user
// message), and its function declarations.
func readGeminiRequest(body []byte) (model.Request, error) {
	contents := gjson.GetBytes(body, "contents")
	if !contents.IsArray() {
		return model.Request{}, fmt.Errorf("a Gemini request with no contents array")
	}
	var req model.Request
	if system := model.GeminiText(gjson.GetBytes(body, "systemInstruction.parts"), false); system != "" {
		req.Messages = append(req.Messages, model.Message{Role: model.RoleSystem, Content: system})
	}
	var lastCalls []model.ToolCall // the calls of the last model content, for the responses after it
	var lastIDs []string           // their ids on the wire
	contents.ForEach(func(_, c gjson.Result) bool {
		parts := c.Get("parts")
		if c.Get("role").String() == "model" {
			msg := provider.GeminiAssistant(parts)
			lastCalls, lastIDs = msg.ToolCalls, wireIDs(parts)
			req.Messages = append(req.Messages, msg)
			return true
		}
		answered := 0
		parts.ForEach(func(_, p gjson.Result) bool {
			if r := p.Get("functionResponse"); r.Exists() {
				req.Messages = append(req.Messages, model.Message{Role: model.RoleTool,
					ToolCallID: responseID(r, lastCalls, lastIDs, answered), Content: responseText(r.Get("response")),
					IsError: r.Get("response.error").Exists() && !r.Get("response.output").Exists()})
				answered++
			}
			return true
		})
		if text := model.GeminiText(parts, false); text != "" {
			req.Messages = append(req.Messages, model.Message{Role: model.RoleUser, Content: text})
		}
		return true
	})
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		t.Get("functionDeclarations").ForEach(func(_, d gjson.Result) bool {
			params := d.Get("parametersJsonSchema")
			if !params.Exists() {
				params = d.Get("parameters")
			}
			req.Tools = append(req.Tools, model.Tool{Name: d.Get("name").String(), Description: d.Get("description").String(),
				Parameters: rawOrNil(params)})
			return true
		})
		return true
	})
	return req, nil
}

// responseID is the vocabulary's id of the call a function response answers: the call whose
// wire id (ids) it names, else the one it stands in the place of (the i-th of the previous
// model content's calls, when that one has its name), as the API pairs calls and responses by
// order when it gives no ids.
func responseID(r gjson.Result, calls []model.ToolCall, ids []string, i int) string {
	if id := r.Get("id").String(); id != "" {
		for k, wire := range ids {
			if wire == id && k < len(calls) {
				return calls[k].ID
			}
		}
	}
	if i < len(calls) && calls[i].Name == r.Get("name").String() {
		return calls[i].ID
	}
	return ""
}

// wireIDs are the ids the function calls among parts carry on the wire, in order ("" none).
func wireIDs(parts gjson.Result) []string {
	var ids []string
	parts.ForEach(func(_, p gjson.Result) bool {
		if call := p.Get("functionCall"); call.Exists() {
			ids = append(ids, call.Get("id").String())
		}
		return true
	})
	return ids
}

// responseText is a function response's text: its output or error when it is a string (as
// this package and the Gemini CLI send results), else the response's JSON.
func responseText(resp gjson.Result) string {
	for _, key := range []string{"output", "error"} {
		if v := resp.Get(key); v.Type == gjson.String {
			return v.Str
		}
	}
	return resp.Raw
}

// newGeminiStream assembles streamGenerateContent chunks (alt=sse): each chunk is an answer of
// its own holding the parts that came since the last; the answer put together has the first
// candidate's parts (texts in a row of one kind, thoughts or not, joined), its finish reason,
// the last of its grounding and URL context metadata (what the provider's own tools did), and
// the last usageMetadata (each chunk's counts the whole call's so far). A chunk with a
// finish reason, an error or a blocked prompt ends it.
func newGeminiStream() streamAnswer { return &geminiChunks{} }

type geminiChunks struct {
	budget
	parts []map[string]json.RawMessage
	text  []*strings.Builder // a text part's text as it comes, by the part's place (nil: no text part)
	last  map[string]json.RawMessage
	// metadata are the candidate's groundingMetadata and urlContextMetadata, the last sent.
	metadata map[string]json.RawMessage
	ended    bool
}

// candidateMetadata are the fields of a candidate that say what the provider's own tools
// did (Google Search, URL context), kept from the last chunk that has them.
var candidateMetadata = []string{"groundingMetadata", "urlContextMetadata"}

func (s *geminiChunks) Add(data []byte) {
	if !gjson.ValidBytes(data) {
		return
	}
	chunk := gjson.ParseBytes(data)
	if chunk.Get("error").IsObject() || chunk.Get("promptFeedback.blockReason").String() != "" {
		s.ended = true
	}
	fields := map[string]json.RawMessage{}
	_ = json.Unmarshal([]byte(chunk.Raw), &fields) // a chunk that is no object adds nothing
	delete(fields, "candidates")
	if s.last == nil {
		s.last = map[string]json.RawMessage{}
	}
	for k, v := range fields {
		s.last[k] = v
	}
	candidate := chunk.Get("candidates.0")
	candidate.Get("content.parts").ForEach(func(_, p gjson.Result) bool {
		s.addPart(p)
		return true
	})
	for _, k := range candidateMetadata {
		if v := candidate.Get(k); v.IsObject() {
			if s.metadata == nil {
				s.metadata = map[string]json.RawMessage{}
			}
			s.metadata[k] = json.RawMessage(v.Raw)
		}
	}
	if reason := candidate.Get("finishReason"); reason.Exists() {
		s.last["finishReason"] = json.RawMessage(reason.Raw)
		s.ended = true
	}
}

// addPart adds one part: a text to the text part before it when both are thoughts or neither
// (and that one carries no signature yet), any other part as it came.
func (s *geminiChunks) addPart(p gjson.Result) {
	var fields map[string]json.RawMessage
	if s.take(p.Raw) == "" || json.Unmarshal([]byte(p.Raw), &fields) != nil {
		return
	}
	text := p.Get("text")
	if n := len(s.parts) - 1; text.Type == gjson.String && n >= 0 && s.text[n] != nil &&
		p.Get("thought").Bool() ==
			gjson.GetBytes(s.parts[n]["thought"], "@this").Bool() &&
		s.parts[n]["thoughtSignature"] == nil {
		s.text[n].WriteString(text.Str)
		if sig, ok := fields["thoughtSignature"]; ok {
			s.parts[n]["thoughtSignature"] = sig
		}
		return
	}
	var b *strings.Builder
	if text.Type == gjson.String {
		b = &strings.Builder{}
		b.WriteString(text.Str)
	}
	s.parts = append(s.parts, fields)
	s.text = append(s.text, b)
}

func (s *geminiChunks) Answer() []byte {
	parts := make([]map[string]json.RawMessage, len(s.parts))
	for i, p := range s.parts {
		parts[i] = p
		if s.text[i] != nil {
			parts[i]["text"], _ = json.Marshal(s.text[i].String())
		}
	}
	candidate := map[string]any{"index": 0, "content": map[string]any{"role": "model", "parts": parts}}
	for k, v := range s.metadata {
		candidate[k] = v
	}
	answer := map[string]any{}
	for k, v := range s.last {
		if k == "finishReason" {
			candidate[k] = v
			continue
		}
		answer[k] = v
	}
	answer["candidates"] = []any{candidate}
	b, _ := json.Marshal(answer) // raw JSON gjson found valid
	return b
}

func (s *geminiChunks) Ended() bool { return s.ended }
