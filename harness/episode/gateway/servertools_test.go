package gateway_test

import (
	"net/http"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestCountsProviderToolUses: in a run that allows the provider's tools, the web searches and
// other tool uses each provider reports are counted, plain and streamed; the searches are
// priced where their price is known, and a use whose price is not known leaves the cost
// unknown, never lower.
func TestCountsProviderToolUses(t *testing.T) {
	for _, c := range []struct {
		name           string
		p              gateway.Protocol
		answer         answer
		searches, more int64
		cost           *float64 // at 1 and 2 USD per million tokens and $0.01 a search
	}{
		{"Anthropic's web search", gateway.Messages, status(http.StatusOK, `{"id":"msg_1","type":"message","role":"assistant","content":[`+
			`{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},`+
			`{"type":"text","text":"Found"}],"stop_reason":"end_turn","usage":{"input_tokens":11,"output_tokens":7,"server_tool_use":{"web_search_requests":2}}}`), 2, 0, ptr(25e-6 + 0.02)},
		{"Anthropic's web fetch, streamed", gateway.Messages, streamed([]string{
			"event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","content":[],"usage":{"input_tokens":11,"output_tokens":1}}}` + "\n\n",
			"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_fetch","input":{}}}` + "\n\n",
			"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n",
			"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":7,"server_tool_use":{"web_fetch_requests":1}}}` + "\n\n",
			"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n"}, nil), 0, 1, nil},
		{"OpenAI's web search", gateway.Responses, status(http.StatusOK, `{"id":"resp_1","object":"response","status":"completed","output":[`+
			`{"type":"web_search_call","id":"ws_1","status":"completed"},{"type":"web_search_call","id":"ws_2","status":"completed"},{"type":"web_search_call","id":"ws_3","status":"completed"},`+
			`{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Found"}]}],"usage":{"input_tokens":11,"output_tokens":7}}`), 3, 0, ptr(25e-6 + 0.03)},
		{"OpenAI's code interpreter", gateway.Responses, status(http.StatusOK, `{"id":"resp_1","object":"response","status":"completed","output":[`+
			`{"type":"code_interpreter_call","id":"ci_1","status":"completed"},{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"4"}]}],`+
			`"usage":{"input_tokens":11,"output_tokens":7}}`), 0, 1, nil},
		{"Google Search, streamed", gateway.Gemini, streamed([]string{
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Fou"}]},"index":0}],"usageMetadata":{"promptTokenCount":11}}` + "\r\n\r\n",
			`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"nd"}]},"finishReason":"STOP","index":0,` +
				`"groundingMetadata":{"webSearchQueries":["a","b"]}}],"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":7,"totalTokenCount":18}}` + "\r\n\r\n"}, nil), 2, 0, nil},
		{"OpenRouter's web plugin", gateway.Chat, status(http.StatusOK, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Found",`+
			`"annotations":[{"type":"url_citation","url_citation":{"url":"https://example.com"}}]},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7}}`), 0, 1, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, c.p, c.answer)
			prices := &model.Prices{Input: 1, Output: 2, WebSearch: gateway.WebSearchPrice(c.p)}
			e := newEpisode(t, f, func(cfg *gateway.Config) { cfg.ProviderTools, cfg.Prices = true, prices })
			req := e.providerRequest(t, c.p, `{"model":"m","stream":true,"messages":[]}`)
			if c.p == gateway.Gemini {
				req = e.geminiRequest(t, http.MethodPost, "/v1beta/models/"+runModel+":streamGenerateContent?alt=sse", geminiBody)
			}
			resp, body, _ := do(t, req)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			tot := e.gw.Totals()
			if tot.Usage.WebSearches != c.searches {
				t.Errorf("%d web searches counted, want %d", tot.Usage.WebSearches, c.searches)
			}
			if tot.Usage.ServerTools != c.more {
				t.Errorf("%d other tool uses counted, want %d", tot.Usage.ServerTools, c.more)
			}
			switch {
			case c.cost == nil && tot.CostUSD != nil:
				t.Errorf("cost $%g, want unknown", *tot.CostUSD)
			case c.cost != nil && tot.CostUSD == nil:
				t.Errorf("cost unknown, want $%g", *c.cost)
			case c.cost != nil && *tot.CostUSD != *c.cost:
				t.Errorf("cost $%g, want $%g", *tot.CostUSD, *c.cost)
			}
		})
	}
}

func ptr(f float64) *float64 { return &f }
