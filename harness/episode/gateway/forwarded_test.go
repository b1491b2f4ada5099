package gateway_test

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
)

// agentCall is one canonical call of an agent's CLI in a protocol: where it goes, the headers
// its SDK sends beside the episode's token, and its body with something of each kind the
// gateway changes: a model name of the agent's own that the run maps to its model (a CLI's
// background model), a field and a tool key the protocol does
// not allow, a beta the gateway does not pass, and headers that stay behind.
type agentCall struct {
	name   string
	p      gateway.Protocol
	path   string
	header []string // name, value pairs
	body   string
}

var agentCalls = []agentCall{
	{name: "chat", p: gateway.Chat, path: "/v1/chat/completions",
		header: []string{"User-Agent", "OpenAI/JS 5.1.0", "Accept", "application/json", "X-Stainless-Lang", "js",
			"OpenAI-Organization", "org-agent"},
		body: `{"model":"agent-alias","messages":[{"role":"system","content":"You are an SRE."},` +
			`{"role":"user","content":"Why are the alerts firing?"}],` +
			`"tools":[{"type":"function","function":{"name":"bash","parameters":{"type":"object"}},` +
			`"cache_control":{"type":"ephemeral"}}],"plugins":[{"id":"web"}],"max_tokens":1000,"stream":STREAM}`},
	{name: "responses", p: gateway.Responses, path: "/v1/responses",
		header: []string{"User-Agent", "codex_cli_rs/0.171.0", "Accept", "text/event-stream",
			"OpenAI-Beta", "responses=experimental,assistants=v2", "Session_id", "agent-session"},
		body: `{"model":"agent-alias","instructions":"You are an SRE.","input":[{"type":"message","role":"user",` +
			`"content":[{"type":"input_text","text":"Why are the alerts firing?"}]}],` +
			`"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object"},"strict":false}],` +
			`"background":true,"store":false,"stream":STREAM}`},
	{name: "messages", p: gateway.Messages, path: "/v1/messages?beta=true",
		header: []string{"User-Agent", "claude-cli/2.1.197 (external, cli)", "Accept", "application/json",
			"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "claude-code-20250219,web-fetch-2025-09-10",
			"X-App", "cli"},
		body: `{"model":"agent-alias","max_tokens":1000,"system":[{"type":"text","text":"You are an SRE."}],` +
			`"messages":[{"role":"user","content":"Why are the alerts firing?"}],` +
			`"tools":[{"name":"Bash","description":"Run a command.","input_schema":{"type":"object"}}],` +
			`"container":"container_agent","stream":STREAM}`},
	{name: "gemini", p: gateway.Gemini, path: "/v1beta/models/agent-alias:generateContent",
		header: []string{"User-Agent", "GeminiCLI/0.61.0", "X-Goog-Api-Client", "google-genai-sdk/1.30.0"},
		body: `{"contents":[{"role":"user","parts":[{"text":"Why are the alerts firing?"}]}],` +
			`"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{"type":"object"}}]}],` +
			`"cachedContent":"cachedContents/agent","generationConfig":{"temperature":0}}`},
}

// TestForwardedRequests: each protocol's canonical agent call, plain and streamed, reaches the
// provider as testdata/requests/PROTOCOL-plain|stream.http has it, beside what the agent sent
// and what the trajectory recorded as stripped (go test -update rewrites them): the run's
// model and key in place of the agent's, what the protocol does not allow taken out, the
// agent's other headers left behind; byte for byte.
func TestForwardedRequests(t *testing.T) {
	for _, c := range agentCalls {
		for _, stream := range []bool{false, true} {
			kind := map[bool]string{false: "plain", true: "stream"}[stream]
			t.Run(c.name+"/"+kind, func(t *testing.T) {
				f := newProvider(t, c.p)
				e := newEpisode(t, f, func(cfg *gateway.Config) { cfg.Mapped = []string{"agent-*"} })
				req := c.request(t, e, stream)
				sentBody := readBody(t, req)
				var out strings.Builder
				writeRequest(&out, "the agent sent the gateway", req.Method, req.URL.RequestURI(), req.Header, sentBody)
				resp, answer, err := do(t, req)
				if err != nil {
					t.Fatalf("reading the answer: %v", err)
				}
				if resp.StatusCode != http.StatusOK {
					t.Fatalf("status %d: %s", resp.StatusCode, answer)
				}
				if f.calls() != 1 {
					t.Fatalf("the provider got %d calls, want 1", f.calls())
				}
				header, body, _ := f.sent(0)
				writeRequest(&out, "the provider got", http.MethodPost, f.uri(0), header, body)
				fmt.Fprintf(&out, "# recorded\n")
				for _, ev := range e.recorded() {
					if ev.Kind == model.KindStripped {
						fmt.Fprintf(&out, "%s: %s\n", ev.Kind, ev.Error)
					}
				}
				golden.Check(t, filepath.Join("testdata", "requests", c.name+"-"+kind+".http"), out.String())
			})
		}
	}
}

// request is the call, streamed or not, as the agent's SDK sends it to the gateway e, with
// the episode's token where that SDK puts it.
func (c agentCall) request(t *testing.T, e *episode, stream bool) *http.Request {
	t.Helper()
	path, body := c.path, strings.Replace(c.body, "STREAM", fmt.Sprint(stream), 1)
	if c.p == gateway.Gemini && stream {
		path = strings.Replace(path, ":generateContent", ":streamGenerateContent?alt=sse&key="+token, 1)
	}
	var req *http.Request
	if c.p == gateway.Gemini {
		req = e.geminiRequest(t, http.MethodPost, path, body)
		if stream {
			req.Header.Del("x-goog-api-key")
		}
	} else {
		req = e.request(t, c.p, path, body)
	}
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	return req
}

// readBody is req's body, which it keeps so that req can still be sent.
func readBody(t *testing.T, req *http.Request) string {
	t.Helper()
	b, err := req.GetBody()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	body, err := io.ReadAll(b)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}

// writeRequest writes a request as an HTTP/1.1 message would start, its headers sorted and
// the secrets named (the episode's token, the run's key), under a comment line: what.
func writeRequest(out *strings.Builder, what, method, uri string, header http.Header, body string) {
	named := strings.NewReplacer(token, "<the episode's token>", canary, "<the run's key>")
	fmt.Fprintf(out, "# %s\n%s %s\n", what, method, named.Replace(uri))
	keys := make([]string, 0, len(header))
	for k := range header {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range header[k] {
			fmt.Fprintf(out, "%s: %s\n", k, named.Replace(v))
		}
	}
	fmt.Fprintf(out, "\n%s\n\n", body)
}
