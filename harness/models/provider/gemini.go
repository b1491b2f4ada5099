package provider

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// GeminiAPIVersion is the version of Google's Gemini API in the paths it is called at: the
// one Google's own SDK and CLI call, thought signatures and JSON-schema tools included.
const GeminiAPIVersion = "v1beta"

// Gemini speaks Google's Gemini API (generateContent): a conversation of contents, the model's
// parts kept whole and sent back as received (its thought signatures with them, which the API
// asks for on the calls of thinking models), function declarations with JSON-schema
// parameters, and a thinking level for the reasoning effort.
type Gemini struct {
	Options
}

// GeminiPath is where a model's method is called, under the API root: /v1beta/models/M:method.
func GeminiPath(model, method string) string {
	return "/" + GeminiAPIVersion + "/models/" + url.PathEscape(model) + ":" + method
}

// Complete sends the conversation with every tool (function calling auto), if there are any.
func (m *Gemini) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	body, err := json.Marshal(m.requestBody(req))
	if err != nil {
		return model.Reply{}, err
	}
	header := http.Header{}
	header.Set("x-goog-api-key", m.APIKey)
	answer, err := m.post(ctx, m.BaseURL+GeminiPath(m.Model, "generateContent"), header, body, GeminiFailure)
	if err != nil {
		return model.Reply{}, fmt.Errorf("%s: %w", m.Model, err)
	}
	m.noteMissingUsage(ctx, answer, "usageMetadata", "promptTokenCount", "candidatesTokenCount")
	return ReadGeminiAnswer(answer)
}

// part is one part of a content the request builds; the model's own parts go back as
// json.RawMessage, exactly as received.
type part = map[string]any

func (m *Gemini) requestBody(req model.Request) map[string]any {
	var system []part
	contents := alternating{field: "parts"}
	add := contents.add
	calls := map[string]geminiCall{} // a call's name and its id on the wire, by its id
	for _, msg := range req.Messages {
		switch msg.Role {
		case model.RoleSystem:
			system = append(system, part{"text": msg.Content})
		case model.RoleTool:
			add("user", functionResponse(msg, calls[msg.ToolCallID]))
		case model.RoleAssistant:
			parts, wire := geminiParts(msg)
			for i, c := range msg.ToolCalls {
				calls[c.ID] = geminiCall{name: c.Name}
				if i < len(wire) {
					calls[c.ID] = geminiCall{name: c.Name, wireID: wire[i]}
				}
			}
			add("model", parts...)
		default:
			add("user", part{"text": msg.Content})
		}
	}
	body := map[string]any{"contents": contents.turns}
	if len(system) > 0 {
		body["systemInstruction"] = map[string]any{"parts": system}
	}
	if len(req.Tools) > 0 { // the judge asks with none
		decls := make([]part, 0, len(req.Tools))
		for _, t := range req.Tools {
			decls = append(decls, part{"name": t.Name, "description": t.Description, "parametersJsonSchema": t.Parameters})
		}
		body["tools"] = []any{part{"functionDeclarations": decls}}
		body["toolConfig"] = part{"functionCallingConfig": part{"mode": "AUTO"}}
	}
	config := part{}
	if m.MaxTokens > 0 {
		config["maxOutputTokens"] = m.MaxTokens
	}
	if m.ReasoningEffort != "" {
		config["thinkingConfig"] = part{"thinkingLevel": m.ReasoningEffort}
	}
	m.addParams(body, config, "temperature", "topP")
	if len(config) > 0 {
		body["generationConfig"] = config
	}
	return body
}

// geminiCall is what a function response needs of its call.
type geminiCall struct {
	name   string
	wireID string // the id the API gave the call ("" none), which its response names too
}

// geminiParts is an assistant message's parts for the API: the parts its reply came with
// (Opaque), as received, else its text and calls; and the ids its calls carry on the wire, in
// order. A message with neither gets a text, as a content needs a part.
func geminiParts(msg model.Message) (parts []any, wire []string) {
	var kept []json.RawMessage
	_ = json.Unmarshal(msg.Opaque, &kept) // nothing kept: the message alone says it all
	for _, raw := range kept {
		if call := gjson.GetBytes(raw, "functionCall"); call.Exists() {
			wire = append(wire, call.Get("id").String())
		}
		parts = append(parts, raw)
	}
	if len(parts) == 0 {
		if msg.Content != "" {
			parts = append(parts, part{"text": msg.Content})
		}
		for _, c := range msg.ToolCalls {
			parts = append(parts, part{"functionCall": part{"name": c.Name, "args": callArgs(c)}})
		}
	}
	if len(parts) == 0 {
		parts = append(parts, part{"text": noAnswer})
	}
	return parts, wire
}

// callArgs are a call's arguments as a JSON object: {} when the model wrote none (the loop
// already refused the call).
func callArgs(c model.ToolCall) json.RawMessage {
	if !gjson.Valid(c.Arguments) || !gjson.Parse(c.Arguments).IsObject() {
		return json.RawMessage(`{}`)
	}
	return json.RawMessage(c.Arguments)
}

// functionResponse is a tool message as a functionResponse part: the result's text under
// "output" (under "error" for a refusal), as the API's function responses are objects.
func functionResponse(msg model.Message, call geminiCall) part {
	key := "output"
	if msg.IsError {
		key = "error"
	}
	resp := part{"name": call.name, "response": part{key: msg.Content}}
	if call.wireID != "" {
		resp["id"] = call.wireID
	}
	return part{"functionResponse": resp}
}

// geminiStatus is the HTTP status of each status of the API's errors (google.rpc.Code), for
// an error reported in an answer of status 200.
var geminiStatus = map[string]int{
	"INVALID_ARGUMENT": http.StatusBadRequest, "FAILED_PRECONDITION": http.StatusBadRequest,
	"OUT_OF_RANGE":    http.StatusBadRequest,
	"UNAUTHENTICATED": http.StatusUnauthorized, "PERMISSION_DENIED": http.StatusForbidden,
	"NOT_FOUND": http.StatusNotFound,
	"ABORTED":   http.StatusConflict, "RESOURCE_EXHAUSTED": http.StatusTooManyRequests,
	"INTERNAL":    http.StatusInternalServerError,
	"UNAVAILABLE": http.StatusServiceUnavailable, "DEADLINE_EXCEEDED": http.StatusGatewayTimeout,
}

// GeminiFailure finds what a 200 answer reports in place of a reply: an error object (its
// status decides, as its HTTP status would: RESOURCE_EXHAUSTED and UNAVAILABLE are retried; an
// unknown one counts as INTERNAL), or a prompt the API blocked (promptFeedback.blockReason),
// which no retry changes.
func GeminiFailure(answer []byte) *APIError {
	if e := gjson.GetBytes(answer, "error"); e.IsObject() {
		status, ok := geminiStatus[e.Get("status").String()]
		if !ok {
			status = http.StatusInternalServerError
		}
		return &APIError{Status: status, Code: e.Get("status").String(), Message: e.Get("message").String(),
			billing: billingRefusal(e)}
	}
	if reason := gjson.GetBytes(answer, "promptFeedback.blockReason").String(); reason != "" &&
		!gjson.GetBytes(answer, "candidates.0").Exists() {
		return &APIError{Status: http.StatusBadRequest, Code: reason, Message: "the prompt was blocked (" + reason + ")"}
	}
	return nil
}

// ReadGeminiAnswer reads a generateContent answer: its first candidate's content as a reply
// (GeminiAssistant), the usage, and whether it stopped at the output cap.
func ReadGeminiAnswer(answer []byte) (model.Reply, error) {
	candidate := gjson.GetBytes(answer, "candidates.0")
	if !candidate.Exists() {
		return model.Reply{}, fmt.Errorf("%w: no candidates in %.200s", errNoReply, answer)
	}
	usage := GeminiUsage([]byte(gjson.GetBytes(answer, "usageMetadata").Raw))
	return model.Reply{Message: GeminiAssistant(candidate.Get("content.parts")), Usage: usage,
		Cut: candidate.Get("finishReason").String() == "MAX_TOKENS"}, nil
}

// GeminiAssistant reads a model content's parts, of an answer or of a request's history: its
// text (thoughts aside), its function calls, and the parts as received (kept whole in Opaque,
// with their thought signatures, to send back); its arguments are canonicalJSON. A call's id
// is made of its place, name and arguments, whatever id it carries on the wire: the API mostly
// gives none, and the Gemini CLI then sends the call back with an id of its own making, so that
// only such an id reads alike in the answer and in the history an agent sends back.
func GeminiAssistant(parts gjson.Result) model.Message {
	out := model.Message{Role: model.RoleAssistant, Content: model.GeminiText(parts, false)}
	i := 0
	parts.ForEach(func(_, p gjson.Result) bool {
		call := p.Get("functionCall")
		if !call.Exists() {
			return true
		}
		args := canonicalJSON(call.Get("args").Raw)
		sum := sha256.Sum256([]byte(strconv.Itoa(i) + "\x00" + call.Get("name").String() + "\x00" + args))
		out.ToolCalls = append(out.ToolCalls,
			model.ToolCall{ID: "call_" + hex.EncodeToString(sum[:6]), Name: call.Get("name").String(), Arguments: args})
		i++
		return true
	})
	if len(parts.Array()) > 0 {
		out.Opaque = json.RawMessage(parts.Raw)
	}
	return out
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
