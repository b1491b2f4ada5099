package fakecli

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// geminiModels is where the Gemini API's model methods are.
const geminiModels = "/v1beta/models/"

// gemini answers the Gemini API: countTokens with a count, generateContent with an answer,
// streamGenerateContent?alt=sse with the same answer in chunks, as the API streams (a text
// in two, the second with the finish reason and the usage; a call in one). The first turn (no call in the
// contents yet) calls the shell tool the request declares with Command; later ones answer
// Final; a request declaring no shell tool (a side call) gets a short text, or {} when it asks
// for JSON.
func (s *Server) gemini(w http.ResponseWriter, r *http.Request, req gjson.Result) {
	modelName, method, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, geminiModels), ":")
	if method == "countTokens" {
		writeJSON(w, map[string]int{"totalTokens": len(req.Raw) / 4})
		return
	}
	calls := 0
	for _, c := range req.Get("contents").Array() {
		for _, p := range c.Get("parts").Array() {
			if p.Get("functionCall").Exists() {
				calls++
			}
		}
	}
	var part map[string]any
	switch tool := geminiShell(req); {
	case tool == "" && req.Get("generationConfig.responseMimeType").String() == "application/json":
		part = map[string]any{"text": "{}"}
	case tool == "":
		part = map[string]any{"text": "Investigation"}
	case s.step(calls) == stepAnswer:
		part = map[string]any{"text": s.Script.Final}
	case s.step(calls) == stepWeb:
		part = map[string]any{"functionCall": map[string]any{"name": s.Script.Web, "args": WebArgs}}
	default:
		part = map[string]any{"functionCall": map[string]any{"name": tool,
			"args": map[string]any{"command": s.Script.Command, "description": "Investigate"}}}
	}
	usage := map[string]int{"promptTokenCount": inputTokens, "candidatesTokenCount": outputTokens,
		"totalTokenCount": inputTokens + outputTokens}
	answer := func(parts []any, final bool) map[string]any {
		candidate := map[string]any{"content": map[string]any{"role": "model", "parts": parts}, "index": 0}
		a := map[string]any{"candidates": []any{candidate}, "modelVersion": modelName, "responseId": "fake-response"}
		if final {
			candidate["finishReason"] = "STOP"
			a["usageMetadata"] = usage
		}
		return a
	}
	if method == "generateContent" {
		writeJSON(w, answer([]any{part}, true))
		return
	}
	if method != "streamGenerateContent" || r.URL.Query().Get("alt") != "sse" {
		http.Error(w, `{"error":{"code":404,"message":"not found","status":"NOT_FOUND"}}`, http.StatusNotFound)
		return
	}
	sse := newStream(w)
	sse.blank = "\r\n\r\n"
	if text, ok := part["text"].(string); ok && len(text) > 1 {
		sse.data(answer([]any{map[string]any{"text": text[:len(text)/2]}}, false))
		part = map[string]any{"text": text[len(text)/2:]}
	}
	sse.data(answer([]any{part}, true))
}

// geminiShell is the name of the shell tool a Gemini request declares ("" none): a function
// with a command parameter.
func geminiShell(req gjson.Result) string {
	for _, t := range req.Get("tools").Array() {
		for _, d := range t.Get("functionDeclarations").Array() {
			params := d.Get("parametersJsonSchema")
			if !params.Exists() {
				params = d.Get("parameters")
			}
			if params.Get("properties.command").Exists() && strings.Contains(d.Get("name").String(), "shell") {
				return d.Get("name").String()
			}
		}
	}
	return ""
}
