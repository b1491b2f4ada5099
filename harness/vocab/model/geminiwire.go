// The Gemini API's requests, answers and streamed answers read back into the vocabulary, as
// wire.go reads the other three APIs'.

package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// GeminiUsage reads a Gemini usageMetadata object. The API counts the prompt with its cached
// part (cachedContentTokenCount) and the tool-use prompt apart from the prompt, and the
// thinking apart from the answer (candidatesTokenCount): Input adds the prompts, Output the
// answer and the thoughts, which are billed as output.
func GeminiUsage(usage []byte) Usage {
	u := gjson.ParseBytes(usage)
	thoughts := u.Get("thoughtsTokenCount").Int()
	return Usage{Input: u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int(), CachedRead: u.Get("cachedContentTokenCount").Int(),
		Output: u.Get("candidatesTokenCount").Int() + thoughts, Reasoning: thoughts}
}

// ReadGeminiRequest reads a generateContent request: its systemInstruction's parts as a system
// message, then its contents (a model content as one assistant message, as an answer's is
// read; a user content's functionResponse parts as tool messages, each answering the call of
// the previous model content whose id it names, else the one in its place; its text as a user
// message), and its function declarations.
func ReadGeminiRequest(body []byte) (Request, error) {
	contents := gjson.GetBytes(body, "contents")
	if !contents.IsArray() {
		return Request{}, fmt.Errorf("a Gemini request with no contents array")
	}
	var req Request
	if system := geminiText(gjson.GetBytes(body, "systemInstruction.parts"), false); system != "" {
		req.Messages = append(req.Messages, Message{Role: RoleSystem, Content: system})
	}
	var lastCalls []ToolCall // the calls of the last model content, for the responses after it
	var lastIDs []string     // their ids on the wire
	contents.ForEach(func(_, c gjson.Result) bool {
		parts := c.Get("parts")
		if c.Get("role").String() == "model" {
			msg := geminiAssistant(parts)
			lastCalls, lastIDs = msg.ToolCalls, wireIDs(parts)
			req.Messages = append(req.Messages, msg)
			return true
		}
		answered := 0
		parts.ForEach(func(_, p gjson.Result) bool {
			if r := p.Get("functionResponse"); r.Exists() {
				req.Messages = append(req.Messages, Message{Role: RoleTool, ToolCallID: responseID(r, lastCalls, lastIDs, answered),
					Content: responseText(r.Get("response")), IsError: r.Get("response.error").Exists() && !r.Get("response.output").Exists()})
				answered++
			}
			return true
		})
		if text := geminiText(parts, false); text != "" {
			req.Messages = append(req.Messages, Message{Role: RoleUser, Content: text})
		}
		return true
	})
	gjson.GetBytes(body, "tools").ForEach(func(_, t gjson.Result) bool {
		t.Get("functionDeclarations").ForEach(func(_, d gjson.Result) bool {
			params := d.Get("parametersJsonSchema")
			if !params.Exists() {
				params = d.Get("parameters")
			}
			req.Tools = append(req.Tools, Tool{Name: d.Get("name").String(), Description: d.Get("description").String(), Parameters: rawOrNil(params)})
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
func responseID(r gjson.Result, calls []ToolCall, ids []string, i int) string {
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

// ReadGeminiAnswer reads a generateContent answer: its first candidate's content as a reply
// (geminiAssistant), the usage, and whether it stopped at the output cap.
func ReadGeminiAnswer(answer []byte) (Reply, error) {
	candidate := gjson.GetBytes(answer, "candidates.0")
	if !candidate.Exists() {
		return Reply{}, fmt.Errorf("%w: no candidates in %.200s", errNoReply, answer)
	}
	usage := GeminiUsage([]byte(gjson.GetBytes(answer, "usageMetadata").Raw))
	return Reply{Message: geminiAssistant(candidate.Get("content.parts")), Usage: usage,
		Cut: candidate.Get("finishReason").String() == "MAX_TOKENS"}, nil
}

// geminiAssistant reads a model content's parts, of an answer or of a request's history: its
// text (thoughts aside), its function calls, and the parts as received (kept whole in Opaque,
// with their thought signatures, to send back); its arguments are canonicalJSON. A call's id
// is made of its place, name and arguments, whatever id it carries on the wire: the API mostly gives none, and the Gemini CLI
// then sends the call back with an id of its own making, so that only such an id reads alike
// in the answer and in the history an agent sends back.
func geminiAssistant(parts gjson.Result) Message {
	out := Message{Role: RoleAssistant, Content: geminiText(parts, false)}
	i := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		call := p.Get("functionCall")
		if !call.Exists() {
			return true
		}
		args := canonicalJSON(call.Get("args").Raw)
		sum := sha256.Sum256([]byte(strconv.Itoa(i) + "\x00" + call.Get("name").String() + "\x00" + args))
		out.ToolCalls = append(out.ToolCalls, ToolCall{ID: "call_" + hex.EncodeToString(sum[:6]), Name: call.Get("name").String(), Arguments: args})
		i++
		return true
	})
	if len(parts.Array()) > 0 {
		out.Opaque = json.RawMessage(parts.Raw)
	}
	return out
}

// geminiText is the text of parts, joined as they come (the API cuts a text into parts
// anywhere): the thoughts' when thoughts is set, else the rest's.
func geminiText(parts gjson.Result, thoughts bool) string {
	var b strings.Builder
	parts.ForEach(func(_, p gjson.Result) bool {
		if t := p.Get("text"); t.Type == gjson.String && p.Get("thought").Bool() == thoughts {
			b.WriteString(t.Str)
		}
		return true
	})
	return b.String()
}

// canonicalJSON is raw JSON written one way ("{}" when it is none): no white space, keys in
// order, no escape where a character does: arguments read alike whether the API or the agent
// wrote them (JavaScript's JSON.stringify and a server's encoder space and escape otherwise).
func canonicalJSON(raw string) string {
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	var v any
	if d.Decode(&v) != nil {
		return "{}"
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if e.Encode(v) != nil {
		return "{}"
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// NewGeminiStream assembles streamGenerateContent chunks (alt=sse): each chunk is an answer of
// its own holding the parts that came since the last; the answer put together has the first
// candidate's parts (texts in a row of one kind, thoughts or not, joined), its finish reason,
// the last of its grounding and URL context metadata (what the provider's own tools did), and
// the last usageMetadata (each chunk's counts the whole call's so far). A chunk with a
// finish reason, an error or a blocked prompt ends it.
func NewGeminiStream() StreamAnswer { return &geminiStream{} }

type geminiStream struct {
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

func (s *geminiStream) Add(data []byte) {
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
func (s *geminiStream) addPart(p gjson.Result) {
	var fields map[string]json.RawMessage
	if s.take(p.Raw) == "" || json.Unmarshal([]byte(p.Raw), &fields) != nil {
		return
	}
	text := p.Get("text")
	if n := len(s.parts) - 1; text.Type == gjson.String && n >= 0 && s.text[n] != nil &&
		p.Get("thought").Bool() == gjson.GetBytes(s.parts[n]["thought"], "@this").Bool() && s.parts[n]["thoughtSignature"] == nil {
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

func (s *geminiStream) Answer() []byte {
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

func (s *geminiStream) Ended() bool { return s.ended }
