package gateway

import (
	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// The uses of the tools a provider ran itself, read from its answer: a run that allows them
// (Config.ProviderTools) counts them, for what they cost beside the tokens. Anything the
// provider did on its side that is not a web search counts as another use (Usage.ServerTools),
// whose price is unknown, so that the cost is unknown rather than too low.

// clientItems are the items of a Responses answer's output that no provider-side tool made.
var clientItems = set("message", "reasoning", "function_call", "custom_tool_call")

// serverToolUses are the web searches and other provider-side tool uses answer, an answer of
// protocol p (a stream's put together), reports:
//
//	Messages   usage.server_tool_use.web_search_requests; other uses: the server_tool_use
//	           blocks of other tools, and mcp_tool_use blocks
//	Responses  web_search_call items; other uses: any item a client tool does not make
//	Gemini     groundingMetadata.webSearchQueries of each candidate; other uses: a candidate's
//	           urlContextMetadata, and executableCode parts
//	Chat       nothing is reported by the API; OpenRouter's web plugin's url_citation
//	           annotations count as another use (its price is per result)
func serverToolUses(p Protocol, answer []byte) model.Usage {
	a := gjson.ParseBytes(answer)
	var u model.Usage
	switch p {
	case Messages:
		u.WebSearches = a.Get("usage.server_tool_use.web_search_requests").Int()
		for _, b := range a.Get("content").Array() {
			typ, name := b.Get("type").String(), b.Get("name").String()
			if (typ == "server_tool_use" && name != "web_search") || typ == "mcp_tool_use" {
				u.ServerTools++
			}
		}
	case Responses:
		for _, item := range a.Get("output").Array() {
			switch typ := item.Get("type").String(); {
			case typ == "web_search_call":
				u.WebSearches++
			case !clientItems[typ]:
				u.ServerTools++
			}
		}
	case Gemini:
		for _, c := range a.Get("candidates").Array() {
			u.WebSearches += int64(len(c.Get("groundingMetadata.webSearchQueries").Array()))
			if c.Get("urlContextMetadata").Exists() {
				u.ServerTools++
			}
			for _, part := range c.Get("content.parts").Array() {
				if part.Get("executableCode").Exists() {
					u.ServerTools++
				}
			}
		}
	default:
		for _, c := range a.Get("choices").Array() {
			for _, n := range c.Get("message.annotations").Array() {
				if n.Get("type").String() == "url_citation" {
					u.ServerTools++
					break
				}
			}
		}
	}
	return u
}

// WebSearchPrice is the price of one web search the provider of protocol p makes, in USD, as
// its price list gives it; 0 where it is not known (the Gemini API's grounding, billed per
// prompt or per query by model, with a free allowance; OpenRouter's web plugin, billed per
// result). Anthropic's web search is $10 per 1,000 searches; OpenAI's web search tool $10 per
// 1,000 calls (docs/agents.md says where from).
func WebSearchPrice(p Protocol) float64 {
	switch p {
	case Messages, Responses:
		return 10.0 / 1000
	}
	return 0
}
