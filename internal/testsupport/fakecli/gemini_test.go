package fakecli

import (
	"bufio"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// geminiChunks posts body to the streamed method of model m and returns each chunk.
func geminiChunks(t *testing.T, url, body string) []gjson.Result {
	t.Helper()
	resp, err := http.Post(url+"/v1beta/models/m:streamGenerateContent?alt=sse", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	var chunks []gjson.Result
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(strings.TrimRight(sc.Text(), "\r"), "data: "); ok {
			if !gjson.Valid(data) {
				t.Fatalf("chunk is not JSON: %s", data)
			}
			chunks = append(chunks, gjson.Parse(data))
		}
	}
	return chunks
}

func TestGeminiTurns(t *testing.T) {
	srv := httptest.NewServer(&Server{Script: Script{Command: "echo hi > out", Final: "done"}})
	defer srv.Close()
	tools := `"tools":[{"functionDeclarations":[{"name":"read_file","parametersJsonSchema":{"properties":{"file_path":{}}}},` +
		`{"name":"run_shell_command","parametersJsonSchema":{"properties":{"command":{"type":"string"}}}}]}]`
	first := geminiChunks(t, srv.URL, `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]}]}`)
	last := first[len(first)-1]
	if call := last.Get("candidates.0.content.parts.0.functionCall"); call.Get("name").String() != "run_shell_command" || call.Get("args.command").String() != "echo hi > out" {
		t.Errorf("the first turn: %s", last.Raw)
	}
	if last.Get("candidates.0.finishReason").String() != "STOP" || last.Get("usageMetadata.promptTokenCount").Int() != inputTokens {
		t.Errorf("the last chunk has no finish reason or usage: %s", last.Raw)
	}
	second := geminiChunks(t, srv.URL, `{`+tools+`,"contents":[{"role":"user","parts":[{"text":"go"}]},`+
		`{"role":"model","parts":[{"functionCall":{"name":"run_shell_command","args":{"command":"x"}}}]},`+
		`{"role":"user","parts":[{"functionResponse":{"name":"run_shell_command","response":{"output":"ok"}}}]}]}`)
	text := ""
	for _, c := range second {
		text += c.Get("candidates.0.content.parts.0.text").String()
	}
	if len(second) != 2 || second[0].Get("candidates.0.finishReason").Exists() {
		t.Errorf("the final text comes in two chunks, the finish reason in the last: %v", second)
	}
	if text != "done" {
		t.Errorf("the final text %q, want done", text)
	}
	side := geminiChunks(t, srv.URL, `{"contents":[{"role":"user","parts":[{"text":"classify"}]}],"generationConfig":{"responseMimeType":"application/json"}}`)
	if got := side[len(side)-1].Get("candidates.0.content.parts.0.text").String(); !strings.HasSuffix(got, "}") {
		t.Errorf("a side call asking for JSON gets %q", got)
	}
	resp, err := http.Post(srv.URL+"/v1beta/models/m:countTokens", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !gjson.GetBytes(b, "totalTokens").Exists() {
		t.Errorf("countTokens: %s", b)
	}
	resp, err = http.Post(srv.URL+"/v1beta/models/m:streamGenerateContent", "application/json", strings.NewReader(`{"contents":[]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a stream without alt=sse: %d", resp.StatusCode)
	}
}
