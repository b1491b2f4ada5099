//go:build linux

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// billingUpstream is a provider on 127.0.0.1 that reads a request as Python's json and Go's
// encoding/json do (the last of a repeated key wins) and bills every call it serves a known
// amount: 1,000,000 input tokens and the request's output cap (1,000,000 when it names none)
// as output, so $2 a call at $1 a million tokens either way. It speaks Chat Completions (a
// stream's usage only when stream_options.include_usage asks), the Responses API, Anthropic
// Messages and Gemini, plain and streamed; a request whose body holds HANGUP gets its stream
// cut after its first event, billed all the same.
type billingUpstream struct {
	url string

	mu     sync.Mutex
	models []string // the model each served call was for
	billed float64  // USD, at $1 a million tokens in and out
}

const billedInput = 1_000_000

func newBillingUpstream(t *testing.T) *billingUpstream {
	u := &billingUpstream{}
	srv := httptest.NewServer(withModelsList(u.ServeHTTP)) // run checks the endpoint first
	t.Cleanup(srv.Close)
	u.url = srv.URL
	return u
}

// served is the models of the calls served, and what they were billed.
func (u *billingUpstream) served() ([]string, float64) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.models...), u.billed
}

func (u *billingUpstream) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	if json.Unmarshal(raw, &body) != nil {
		http.Error(w, `{"error":{"message":"bad json"}}`, http.StatusBadRequest)
		return
	}
	name, _ := body["model"].(string)
	stream := body["stream"] == true
	output := 1_000_000.0
	for _, field := range []string{"max_tokens", "max_completion_tokens", "max_output_tokens"} {
		if v, ok := body[field].(float64); ok {
			output = v
		}
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/v1beta/models/"); ok {
		var method string
		name, method, _ = strings.Cut(rest, ":")
		stream = method == "streamGenerateContent"
		if cfg, ok := body["generationConfig"].(map[string]any); ok {
			if v, ok := cfg["maxOutputTokens"].(float64); ok {
				output = v
			}
		}
	}
	u.mu.Lock()
	u.models = append(u.models, name)
	u.billed += (billedInput + output) / 1e6
	u.mu.Unlock()
	events, plain := billedAnswer(r.URL.Path, name, int64(output), body)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, plain)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for i, ev := range events {
		if i == 1 && strings.Contains(string(raw), "HANGUP") {
			http.NewResponseController(w).Flush()
			panic(http.ErrAbortHandler) // cut after the first event, before the usage is all told
		}
		io.WriteString(w, ev+"\n\n")
	}
}

// billedAnswer is a call's answer in the protocol of path: a stream's events (the usage in the
// last but a Chat stream's [DONE]) and the plain answer.
func billedAnswer(path, name string, output int64, body map[string]any) (events []string, plain string) {
	in := int64(billedInput)
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		usage := fmt.Sprintf(`{"prompt_tokens":%d,"completion_tokens":%d,"total_tokens":%d}`, in, output, in+output)
		chunk := `data: {"id":"c","object":"chat.completion.chunk","model":"` + name + `","choices":[{"index":0,"delta":{"role":"assistant","content":"ok"},"finish_reason":"stop"}]}`
		events = []string{chunk}
		if opts, _ := body["stream_options"].(map[string]any); opts["include_usage"] == true {
			events = append(events, `data: {"id":"c","object":"chat.completion.chunk","model":"`+name+`","choices":[],"usage":`+usage+`}`)
		}
		events = append(events, "data: [DONE]")
		return events, `{"id":"c","object":"chat.completion","model":"` + name + `","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":` + usage + `}`
	case strings.HasSuffix(path, "/responses"):
		response := `{"id":"r","object":"response","status":"completed","model":"` + name + `","output":[{"type":"message","id":"m","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],` +
			fmt.Sprintf(`"usage":{"input_tokens":%d,"output_tokens":%d,"total_tokens":%d}}`, in, output, in+output)
		return []string{
			"event: response.created\ndata: " + `{"type":"response.created","response":{"id":"r","object":"response","status":"in_progress","output":[]}}`,
			"event: response.completed\ndata: " + `{"type":"response.completed","response":` + response + `}`,
		}, response
	case strings.HasSuffix(path, "/messages"):
		return []string{
				"event: message_start\ndata: " + fmt.Sprintf(`{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","model":"%s","content":[],"usage":{"input_tokens":%d,"output_tokens":1}}}`, name, in),
				"event: content_block_start\ndata: " + `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
				"event: content_block_delta\ndata: " + `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}`,
				"event: content_block_stop\ndata: " + `{"type":"content_block_stop","index":0}`,
				"event: message_delta\ndata: " + fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":%d}}`, output),
				"event: message_stop\ndata: " + `{"type":"message_stop"}`,
			}, fmt.Sprintf(`{"id":"m","type":"message","role":"assistant","model":"%s","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","usage":{"input_tokens":%d,"output_tokens":%d}}`,
				name, in, output)
	}
	final := fmt.Sprintf(`{"candidates":[{"content":{"role":"model","parts":[{"text":"ok"}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":%d,"candidatesTokenCount":%d,"totalTokenCount":%d}}`, in, output, in+output)
	return []string{`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"o"}]},"index":0}]}`, "data: " + final}, final
}
