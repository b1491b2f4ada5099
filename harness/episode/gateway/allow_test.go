package gateway_test

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// providerTools are requests that ask the provider to run a tool itself, per protocol: the
// ones issue 42 found passed on, and shapes no list of known server tools would name.
var providerTools = []struct {
	name string
	p    gateway.Protocol
	body string
}{
	{"web search", gateway.Messages, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"type":"web_search_20250305","name":"web_search","max_uses":5}]}`},
	{"web fetch", gateway.Messages, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"name":"Bash","input_schema":{"type":"object"}},{"type":"web_fetch_20250910","name":"web_fetch"}]}`},
	{"code execution", gateway.Messages, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"type":"code_execution_20250522","name":"code_execution"}]}`},
	{"an MCP toolset", gateway.Messages, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"type":"mcp_toolset","mcp_server_name":"x"}]}`},
	{"a server tool of tomorrow", gateway.Messages, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"type":"browse_20270101","name":"browse","input_schema":{"type":"object"}}]}`},
	{"web_search", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"web_search"}]}`},
	{"web_search_preview", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"web_search_preview","search_context_size":"high"}]}`},
	{"mcp", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"mcp","server_label":"x","server_url":"https://example.com/mcp"}]}`},
	{"code_interpreter", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"code_interpreter","container":{"type":"auto"}}]}`},
	{"file_search", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"file_search","vector_store_ids":["vs_1"]}]}`},
	{"a server tool in a namespace", gateway.Responses, `{"model":"m","input":"hi","tools":[{"type":"namespace","name":"n","tools":[{"type":"function","name":"f","parameters":{}},{"type":"web_search"}]}]}`},
	{"a forced web_search_preview", gateway.Responses, `{"model":"m","input":"hi","tool_choice":{"type":"web_search_preview"}}`},
	{"a Chat tool not a function", gateway.Chat, `{"model":"m","messages":[],"tools":[{"type":"web_search"}]}`},
	{"googleSearch", gateway.Gemini, `{"contents":[],"tools":[{"googleSearch":{}}]}`},
	{"google_search_retrieval", gateway.Gemini, `{"contents":[],"tools":[{"google_search_retrieval":{}}]}`},
	{"urlContext", gateway.Gemini, `{"contents":[],"tools":[{"functionDeclarations":[{"name":"f"}]},{"urlContext":{}}]}`},
	{"codeExecution beside functions", gateway.Gemini, `{"contents":[],"tools":[{"functionDeclarations":[{"name":"f"}],"codeExecution":{}}]}`},
	{"in a count's request", gateway.Gemini, `{"generateContentRequest":{"model":"models/m","contents":[],"tools":[{"googleSearch":{}}]}}`},
}

// providerRequest is an agent's request of protocol p for the run's model, holding body's
// fields ("m" its model).
func (e *episode) providerRequest(t *testing.T, p gateway.Protocol, body string) *http.Request {
	t.Helper()
	if p == gateway.Gemini {
		return e.geminiRequest(t, http.MethodPost, "/v1beta/models/"+runModel+":generateContent", body)
	}
	return e.request(t, p, p.Path(), strings.Replace(body, `"model":"m"`, `"model":"`+runModel+`"`, 1))
}

// TestRefusesProviderTools: a request holding a tool the provider runs itself is refused
// with a 400 in the protocol's shape naming it; nothing reaches the provider; the refusal is
// recorded and counted.
func TestRefusesProviderTools(t *testing.T) {
	for _, c := range providerTools {
		t.Run(c.p.String()+"/"+c.name, func(t *testing.T) {
			f := newProvider(t, c.p)
			e := newEpisode(t, f, nil)
			resp, body, _ := do(t, e.providerRequest(t, c.p, c.body))
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d, want 400: %s", resp.StatusCode, body)
			}
			message := gjson.Get(body, "error.message").String()
			if !strings.Contains(message, "provider runs itself") {
				t.Errorf("the refusal does not say why: %s", body)
			}
			if f.calls() != 0 {
				t.Errorf("the provider was called %d times", f.calls())
			}
			tot := e.gw.Totals()
			if tot.ProviderTools != 1 {
				t.Errorf("%d requests counted refused for a provider tool, want 1", tot.ProviderTools)
			}
			if tot.Refused != 1 {
				t.Errorf("%d requests counted refused, want 1", tot.Refused)
			}
			events := e.recorded()
			if len(events) != 2 {
				t.Fatalf("recorded %d events, want the request and the refusal: %+v", len(events), events)
			}
			if !strings.Contains(events[1].Error, "refused by the gateway") {
				t.Errorf("the refusal is recorded as %+v", events[1])
			}
		})
	}
}

// TestStripsWhatIsNotAllowed: a request's fields, tool keys and beta headers outside the
// allow-list are taken out and the rest passed on as it came; what was taken out is recorded
// before the request; a request with nothing to take out goes byte for byte.
func TestStripsWhatIsNotAllowed(t *testing.T) {
	for _, c := range []struct {
		name     string
		p        gateway.Protocol
		body     string
		header   [2]string
		sent     string // what the provider must get, the model aside
		stripped []string
	}{
		{name: "Anthropic's MCP servers and container", p: gateway.Messages,
			body:     `{"model":"m","max_tokens":9,"mcp_servers":[{"type":"url","url":"https://example.com/sse","name":"x"}],"messages":[],"container":"c1"}`,
			sent:     `{"model":"m","max_tokens":9,"messages":[]}`,
			stripped: []string{"mcp_servers", "container"}},
		{name: "the betas of web fetch and the MCP client", p: gateway.Messages,
			body:     `{"model":"m","max_tokens":9,"messages":[]}`,
			header:   [2]string{"anthropic-beta", "claude-code-20250219,web-fetch-2025-09-10, mcp-client-2025-04-04,interleaved-thinking-2025-05-14"},
			sent:     `{"model":"m","max_tokens":9,"messages":[]}`,
			stripped: []string{"header anthropic-beta: mcp-client-2025-04-04", "header anthropic-beta: web-fetch-2025-09-10"}},
		{name: "an OpenAI beta", p: gateway.Responses,
			body:     `{"model":"m","input":"hi"}`,
			header:   [2]string{"openai-beta", "assistants=v2"},
			sent:     `{"model":"m","input":"hi"}`,
			stripped: []string{"header openai-beta: assistants=v2"}},
		{name: "a key of a function tool", p: gateway.Messages,
			body:     `{"model":"m","max_tokens":9,"messages":[],"tools":[{"name":"Bash","input_schema":{"type":"object"},"allowed_callers":["code_execution_20250825"]}]}`,
			sent:     `{"model":"m","max_tokens":9,"messages":[],"tools":[{"name":"Bash","input_schema":{"type":"object"}}]}`,
			stripped: []string{"tools[0].allowed_callers"}},
		{name: "OpenRouter's plugins and web search options", p: gateway.Chat,
			body:     `{"model":"m","messages":[],"plugins":[{"id":"web"}],"web_search_options":{"search_context_size":"high"},"models":["x:online"]}`,
			sent:     `{"model":"m","messages":[]}`,
			stripped: []string{"plugins", "web_search_options", "models"}},
		{name: "a stored prompt and a background response", p: gateway.Responses,
			body:     `{"model":"m","input":"hi","prompt":{"id":"pmpt_1"},"background":true}`,
			sent:     `{"model":"m","input":"hi"}`,
			stripped: []string{"prompt", "background"}},
		{name: "Gemini's cached content", p: gateway.Gemini,
			body:     `{"contents":[],"cachedContent":"cachedContents/x"}`,
			sent:     `{"contents":[]}`,
			stripped: []string{"cachedContent"}},
	} {
		t.Run(c.p.String()+"/"+c.name, func(t *testing.T) {
			f := newProvider(t, c.p)
			e := newEpisode(t, f, nil)
			req := e.providerRequest(t, c.p, c.body)
			if c.header[0] != "" {
				req.Header.Set(c.header[0], c.header[1])
			}
			resp, body, _ := do(t, req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			header, sent, _ := f.sent(0)
			want := strings.Replace(c.sent, `"model":"m"`, `"model":"`+runModel+`"`, 1)
			if sent != want {
				t.Errorf("the provider got\n%s\nwant\n%s", sent, want)
			}
			for _, beta := range header.Values("Anthropic-Beta") {
				if strings.Contains(beta, "mcp") || strings.Contains(beta, "fetch") {
					t.Errorf("the provider got the beta %q", beta)
				}
			}
			if header.Get("Openai-Beta") != "" {
				t.Errorf("the provider got the OpenAI beta %q", header.Get("Openai-Beta"))
			}
			if c.header[0] == "anthropic-beta" && !strings.Contains(header.Get("Anthropic-Beta"), "claude-code-20250219") {
				t.Errorf("the allowed betas were not passed on: %v", header)
			}
			events := e.recorded()
			if len(events) == 0 || events[0].Kind != model.KindStripped {
				t.Fatalf("no stripped event first: %+v", events)
			}
			for _, s := range c.stripped {
				if !strings.Contains(events[0].Error, s) {
					t.Errorf("the record %q does not name %s", events[0].Error, s)
				}
			}
			if events[1].Kind != model.KindRequest || string(events[1].Body) != sent {
				t.Errorf("the request recorded after it is not what was sent: %+v", events[1])
			}
			if got := e.gw.Totals().Stripped; got != 1 {
				t.Errorf("%d requests counted stripped, want 1", got)
			}
		})
	}
}

// TestPassesFunctionCallingAsItCame: the tools and options the real CLIs send (their shapes as
// Claude Code 2.1.197, Codex 0.171.0, the Gemini CLI 0.61.0 and opencode send them) pass byte
// for byte, with nothing recorded as stripped.
func TestPassesFunctionCallingAsItCame(t *testing.T) {
	for _, c := range []struct {
		name string
		p    gateway.Protocol
		body string
	}{
		{"Claude Code", gateway.Messages, `{"model":"m","max_tokens":9, "messages":[],"system":[{"type":"text","text":"s","cache_control":{"type":"ephemeral"}}],` +
			`"tools":[{"name":"Bash","description":"d","input_schema":{"type":"object"}}],"metadata":{"user_id":"u"},"thinking":{"type":"adaptive"},` +
			`"context_management":{"edits":[{"type":"clear_thinking_20251015","keep":"all"}]},"output_config":{"effort":"high"},"stream":true}`},
		{"Codex", gateway.Responses, `{"model":"m","input":[],"tools":[{"type":"function","name":"exec_command","description":"d","strict":false,"parameters":{}},` +
			`{"type":"custom","name":"apply_patch","format":{"type":"grammar"}},` +
			`{"type":"namespace","name":"multi_agent_v1","description":"d","tools":[{"type":"function","name":"spawn_agent","parameters":{}}]}],` +
			`"tool_choice":"auto","parallel_tool_calls":true,"reasoning":{"summary":"auto"},"store":false,"stream":true,"include":["reasoning.encrypted_content"],` +
			`"prompt_cache_key":"k","client_metadata":{"x":"y"}}`},
		{"opencode", gateway.Chat, `{"model":"m","max_tokens":9,"messages":[],"tools":[{"type":"function","function":{"name":"bash","parameters":{}}}],` +
			`"tool_choice":"auto","stream":true,"stream_options":{"include_usage":true}}`},
		{"the Gemini CLI", gateway.Gemini, `{"contents":[],"systemInstruction":{"parts":[{"text":"s"}]},"tools":[{"functionDeclarations":[{"name":"run_shell_command","parametersJsonSchema":{}}]}],` +
			`"generationConfig":{"temperature":1,"thinkingConfig":{"includeThoughts":true}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, c.p)
			e := newEpisode(t, f, nil)
			req := e.providerRequest(t, c.p, c.body)
			req.Header.Set("anthropic-beta", "claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,effort-2025-11-24")
			resp, body, _ := do(t, req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			header, sent, _ := f.sent(0)
			if want := strings.Replace(c.body, `"model":"m"`, `"model":"`+runModel+`"`, 1); sent != want {
				t.Errorf("the provider got\n%s\nwant\n%s", sent, want)
			}
			if c.p == gateway.Messages && header.Get("Anthropic-Beta") != req.Header.Get("anthropic-beta") {
				t.Errorf("the provider got the betas %q", header.Get("Anthropic-Beta"))
			}
			if n := countKind(e.recorded(), model.KindStripped); n != 0 {
				t.Errorf("%d stripped events for a request with nothing to strip", n)
			}
		})
	}
}

// TestProviderToolsWhenAllowed: a run that allows the provider's tools passes them on, as
// everything else, untouched.
func TestProviderToolsWhenAllowed(t *testing.T) {
	for _, c := range providerTools {
		t.Run(c.p.String()+"/"+c.name, func(t *testing.T) {
			f := newProvider(t, c.p)
			e := newEpisode(t, f, func(cfg *gateway.Config) { cfg.ProviderTools = true })
			resp, body, _ := do(t, e.providerRequest(t, c.p, c.body))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if _, sent, _ := f.sent(0); sent != strings.Replace(c.body, `"model":"m"`, `"model":"`+runModel+`"`, 1) {
				t.Errorf("the provider got %s, want the request as it came", sent)
			}
		})
	}
}

// TestOnlineModelRefused: OpenRouter's :online variant, which searches the web for every
// call, is refused when the gateway is made, unless the provider's tools are allowed.
func TestOnlineModelRefused(t *testing.T) {
	cfg := gateway.Config{Token: token, Model: "openai/gpt-5:online", Upstream: gateway.Upstream{Protocol: gateway.Chat, BaseURL: "http://127.0.0.1:1/v1"}}
	if _, err := gateway.New(cfg); !errors.Is(err, gateway.ErrProviderTool) {
		t.Errorf("New(%s) = %v, want ErrProviderTool", cfg.Model, err)
	}
	cfg.ProviderTools = true
	if _, err := gateway.New(cfg); err != nil {
		t.Errorf("New(%s) with the provider's tools allowed: %v", cfg.Model, err)
	}
}
