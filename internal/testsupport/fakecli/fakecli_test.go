package fakecli

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/testsupport/jsoncheck"
)

// events posts body to path and returns the data of each server-sent event, by event name
// (none for Chat Completions, whose stream ends with data: [DONE]).
func events(t *testing.T, url, path, body string) (names []string, data []gjson.Result) {
	t.Helper()
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			names = append(names, strings.TrimPrefix(line, "event: "))
		case line == "data: [DONE]":
		case strings.HasPrefix(line, "data: "):
			d := gjson.Parse(strings.TrimPrefix(line, "data: "))
			if !gjson.Valid(d.Raw) {
				t.Fatalf("event data is not JSON: %s", line)
			}
			data = append(data, d)
		}
	}
	if len(names) > 0 && len(names) != len(data) {
		t.Fatalf("%d event names for %d data lines", len(names), len(data))
	}
	return names, data
}

func TestMessagesTurns(t *testing.T) {
	srv := httptest.NewServer(&Server{Script: Script{Command: "echo hi > out", Final: "done"}})
	defer srv.Close()
	tools := `"tools":[{"name":"Read","input_schema":{"properties":{"path":{}}}},{"name":"Bash","input_schema":{"properties":{"command":{"type":"string"}}}}]`
	names, data := events(t, srv.URL, "/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"}]}`)
	if names[0] != "message_start" || names[len(names)-1] != "message_stop" {
		t.Errorf("events %v", names)
	}
	var input string
	for _, d := range data {
		input += d.Get("delta.partial_json").String()
		if d.Get("content_block.type").String() == "tool_use" && d.Get("content_block.name").String() != "Bash" {
			t.Errorf("tool %s", d.Get("content_block.name"))
		}
	}
	if got := gjson.Get(input, "command").String(); got != "echo hi > out" {
		t.Errorf("the first turn runs %q", got)
	}
	_, data = events(t, srv.URL, "/v1/messages", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"},{"role":"assistant","content":[]},{"role":"user","content":[]}]}`)
	var text string
	for _, d := range data {
		text += d.Get("delta.text").String()
	}
	if text != "done" {
		t.Errorf("the second turn says %q", text)
	}
}

func TestResponsesTurns(t *testing.T) {
	srv := httptest.NewServer(&Server{Script: Script{Command: "ls", Final: `["a/Pod/b"]`}})
	defer srv.Close()
	tools := `"tools":[{"type":"function","name":"exec_command","parameters":{"properties":{"cmd":{"type":"string"}}}}]`
	names, data := events(t, srv.URL, "/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"role":"user","content":"go"}]}`)
	if names[0] != "response.created" || names[len(names)-1] != "response.completed" {
		t.Errorf("events %v", names)
	}
	done := data[len(data)-1].Get("response.output.0")
	if done.Get("name").String() != "exec_command" || gjson.Get(done.Get("arguments").String(), "cmd").String() != "ls" {
		t.Errorf("the first turn's call %s", done.Raw)
	}
	_, data = events(t, srv.URL, "/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"role":"user","content":"go"},{"type":"function_call","call_id":"c"},{"type":"function_call_output","call_id":"c","output":"x"}]}`)
	if got := data[len(data)-1].Get("response.output.0.content.0.text").String(); got != `["a/Pod/b"]` {
		t.Errorf("the second turn says %q", got)
	}
	if got := data[len(data)-1].Get("response.usage.input_tokens").Int(); got != inputTokens {
		t.Errorf("usage %d", got)
	}
}

func TestChatTurns(t *testing.T) {
	srv := httptest.NewServer(&Server{Script: Script{Command: "cat alerts.json", Final: "the end"}})
	defer srv.Close()
	tools := `"tools":[{"type":"function","function":{"name":"task","parameters":{"properties":{"command":{"type":"string"}}}}},` +
		`{"type":"function","function":{"name":"bash","parameters":{"properties":{"command":{"type":"string"},"description":{"type":"string"}}}}}]`
	_, data := events(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true,"stream_options":{"include_usage":true},`+tools+`,"messages":[{"role":"system","content":"s"},{"role":"user","content":"go"}]}`)
	call := data[0].Get("choices.0.delta.tool_calls.0")
	jsoncheck.Fields(t, "the first turn's call", call, map[string]string{"function.name": "bash"})
	if cmd := gjson.Get(call.Get("function.arguments").String(), "command").String(); cmd != "cat alerts.json" {
		t.Errorf("the first turn's call runs %q", cmd)
	}
	if call.Get("id").String() == "" {
		t.Errorf("the first turn's call has no id: %s", data[0].Raw)
	}
	if len(data) < 3 {
		t.Fatalf("%d chunks, want the call's, its end and the usage: %v", len(data), data)
	}
	jsoncheck.Fields(t, "the call's end", data[1], map[string]string{"choices.0.finish_reason": "tool_calls"})
	jsoncheck.Fields(t, "the usage chunk", data[2], map[string]string{"choices.#": "0", "usage.prompt_tokens": strconv.Itoa(inputTokens)})
	_, data = events(t, srv.URL, "/v1/chat/completions", `{"model":"m","stream":true,`+tools+`,"messages":[{"role":"user","content":"go"},{"role":"assistant","tool_calls":[]},{"role":"tool","content":"x"}]}`)
	if len(data) != 2 {
		t.Fatalf("the second turn, unasked for its usage, has %d chunks, want 2: %v", len(data), data)
	}
	jsoncheck.Fields(t, "the second turn's text", data[0], map[string]string{"choices.0.delta.content": "the end"})
	jsoncheck.Fields(t, "the second turn's end", data[1], map[string]string{"choices.0.finish_reason": "stop"})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"title this"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("a call without tools, not streamed: %v", err)
	}
	jsoncheck.Fields(t, "a call without tools, not streamed", gjson.ParseBytes(b),
		map[string]string{"choices.0.message.content": "Investigation", "usage.completion_tokens": strconv.Itoa(outputTokens)})
}

func TestResponsesBashTool(t *testing.T) {
	srv := httptest.NewServer(&Server{Script: Script{Command: "ls", Final: "done"}})
	defer srv.Close()
	tools := `"tools":[{"type":"function","name":"bash","parameters":{"properties":{"command":{"type":"string"},"description":{"type":"string"}}}}]`
	_, data := events(t, srv.URL, "/v1/responses", `{"model":"m","stream":true,`+tools+`,"input":[{"role":"user","content":"go"}]}`)
	if done := data[len(data)-1].Get("response.output.0"); done.Get("name").String() != "bash" || gjson.Get(done.Get("arguments").String(), "command").String() != "ls" {
		t.Errorf("opencode's bash tool is not called: %s", done.Raw)
	}
}

func TestBadBody(t *testing.T) {
	srv := httptest.NewServer(&Server{})
	defer srv.Close()
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", strings.NewReader("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("status %d", resp.StatusCode)
	}
}
