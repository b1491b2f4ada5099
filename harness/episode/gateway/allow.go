package gateway

import (
	"fmt"
	"strings"

	"github.com/tidwall/gjson"
)

// What an agent's request may hold (issue 42). A provider can run tools on its side of the
// API: search the web, fetch pages, call a remote MCP server, run code. With them an agent
// would reach the network the sandbox denies it, and could look up the public ground truth.
// So the gateway passes on only what a function-calling request needs, by an allow-list per
// protocol, never a list of the server tools known today:
//
//   - a top-level field outside the protocol's list is stripped (recorded in the trajectory):
//     the CLIs add harmless fields from one version to the next, and a field missing makes the
//     provider do less, never more;
//   - a tool that is not a client-side function tool is refused, the request answered with an
//     error naming it: taking a tool away in silence would let a model answer a search it
//     was asked for from nothing, where an error tells the agent its tool is not served; a
//     key of a function tool outside its list is stripped;
//   - a header value outside the list (Anthropic's betas, OpenAI's) is stripped: a beta
//     turns a feature on, and one the provider does not get is off.
//
// A run started with the provider's tools allowed (Config.ProviderTools) passes everything.

// allowedFields are the top-level fields of a model call each protocol passes on; tools are
// checked tool by tool (toolsField). Left out on purpose, and so stripped: Anthropic's
// mcp_servers and container (MCP client, code execution's container); OpenAI's prompt (a
// stored prompt, which may bring tools of its own), background (a response fetched later,
// elsewhere) and conversation; OpenRouter's plugins, models and provider and the Chat API's
// web_search_options; Gemini's cachedContent (a cache may hold tools).
var allowedFields = [...]map[string]bool{
	Chat: set("model", "messages", "tools", "tool_choice", "parallel_tool_calls", "stream", "stream_options",
		"max_tokens", "max_completion_tokens", "temperature", "top_p", "stop", "seed", "n",
		"frequency_penalty", "presence_penalty", "logit_bias", "logprobs", "top_logprobs",
		"response_format", "reasoning_effort", "reasoning", "user", "metadata", "store",
		"service_tier", "prompt_cache_key", "safety_identifier", "verbosity", "usage"),
	Responses: set("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls", "stream",
		"stream_options", "store", "include", "reasoning", "text", "max_output_tokens", "max_tool_calls",
		"temperature", "top_p", "top_logprobs", "truncation", "metadata", "user", "service_tier",
		"prompt_cache_key", "prompt_cache_retention", "safety_identifier", "client_metadata",
		"previous_response_id"),
	Messages: set("model", "messages", "system", "tools", "tool_choice", "max_tokens", "stream", "metadata",
		"stop_sequences", "temperature", "top_k", "top_p", "thinking", "context_management",
		"output_config", "service_tier"),
	Gemini: set("contents", "systemInstruction", "system_instruction", "tools", "toolConfig", "tool_config",
		"generationConfig", "generation_config", "safetySettings", "safety_settings",
		// countTokens may wrap a whole request, checked as one (geminiWrapped).
		"generateContentRequest", "generate_content_request", "model"),
}

// toolsField is the field that lists a request's tools, in every protocol, and
// toolChoiceField the one that may force one.
const (
	toolsField      = "tools"
	toolChoiceField = "tool_choice"
)

// toolChoices are the types of a tool_choice object that pass (a string, auto, none,
// required, any, passes as it is): a choice among the function tools; one naming a
// provider-side tool (the Responses API's {"type": "web_search_preview"}) is refused as the
// tool would be.
var toolChoices = [...]map[string]bool{
	Chat:      set("function", "custom", "allowed_tools"),
	Responses: set("function", "custom", "allowed_tools"),
	Messages:  set("auto", "any", "tool", "none"),
	Gemini:    set(),
}

// geminiWrapped is the countTokens field that holds a whole generateContent request.
var geminiWrapped = set("generateContentRequest", "generate_content_request")

// functionKeys are the keys a client-side function tool may hold, per protocol, its
// discriminating type aside: a name, a description and the schema of its arguments, and the
// options that change only how its calls are written (strict schemas, caching).
var functionKeys = [...]map[string]bool{
	Chat:      set("type", "function"),
	Responses: set("type", "name", "description", "parameters", "strict", "format", "tools"),
	Messages:  set("type", "name", "description", "input_schema", "cache_control", "strict"),
	Gemini:    set("functionDeclarations", "function_declarations"),
}

// clientTool says whether tool, one of a request's tools in protocol p, is a tool the agent
// runs itself, and if not, what it is (for the refusal):
//
//	Chat       {"type":"function","function":{...}}
//	Responses  {"type":"function",...}; {"type":"custom",...} (a free-form tool, Codex's
//	           apply_patch); {"type":"namespace","tools":[...]} of those (Codex's groups)
//	Messages   {"name","input_schema",...} with no type, or the type "custom"
//	Gemini     {"functionDeclarations":[...]} and nothing else in the object
func clientTool(p Protocol, tool gjson.Result) (ok bool, what string) {
	typ := tool.Get("type")
	switch p {
	case Chat:
		return typ.String() == "function" && tool.Get("function").IsObject(), describe(tool)
	case Responses:
		switch typ.String() {
		case "function", "custom":
			return tool.Get("name").Type == gjson.String, describe(tool)
		case "namespace":
			for _, t := range tool.Get("tools").Array() {
				if ok, what := clientTool(p, t); !ok || t.Get("type").String() == "namespace" {
					return false, what
				}
			}
			return tool.Get("tools").IsArray(), describe(tool)
		}
		return false, describe(tool)
	case Messages:
		return (!typ.Exists() || typ.String() == "custom") && tool.Get("input_schema").IsObject(), describe(tool)
	default:
		ok = tool.IsObject()
		tool.ForEach(func(k, _ gjson.Result) bool {
			if !functionKeys[Gemini][k.Str] {
				ok, what = false, k.Str
			}
			return ok
		})
		return ok, what
	}
}

// describe names a tool for a refusal: its type, or its name when it has no type.
func describe(tool gjson.Result) string {
	if t := tool.Get("type"); t.Exists() {
		return fmt.Sprintf("type %s", t.Raw)
	}
	if n := tool.Get("name"); n.Exists() {
		return fmt.Sprintf("%s with no input_schema", n.Raw)
	}
	return oneLine(tool.Raw, 80)
}

// allowedBetas are the Anthropic-Beta values passed on, by their name (the value without
// its date): the features of the Messages API that change how a call is read or answered,
// none that runs a tool. Left out, and so stripped: web-fetch, mcp-client, code-execution,
// computer-use, files-api, skills and any beta not listed.
var allowedBetas = set("claude-code", "interleaved-thinking", "thinking-token-count", "context-management",
	"prompt-caching", "prompt-caching-scope", "mid-conversation-system", "effort", "fine-grained-tool-streaming",
	"token-efficient-tools", "output-128k", "context-1m", "extended-cache-ttl", "token-counting")

// allowedOpenAIBetas are the OpenAI-Beta values passed on (none of today's APIs needs one
// but the Responses API's first version).
var allowedOpenAIBetas = set("responses=experimental", "responses=v1")

// allowedHeaderValues are the headers whose values are checked, each against its list: the
// other headers forwarded (forwardedHeaders) say how to read a request, none turns a tool on.
var allowedHeaderValues = map[string]map[string]bool{"Anthropic-Beta": allowedBetas, "Openai-Beta": allowedOpenAIBetas}

// betaName is a beta's name: its value without the date that ends it (NAME-YYYY-MM-DD, or
// NAME-YYYYMMDD as claude-code-20250219).
func betaName(v string) string {
	for _, n := range []int{len("2025-01-31"), len("20250131")} {
		if i := len(v) - n - 1; i > 0 && v[i] == '-' && isDate(v[i+1:]) {
			return v[:i]
		}
	}
	return v
}

// isDate reports whether s reads YYYY-MM-DD or YYYYMMDD.
func isDate(s string) bool {
	dashes := len(s) == len("2025-01-31")
	for i, c := range s {
		if dash := dashes && (i == 4 || i == 7); dash != (c == '-') || (!dash && (c < '0' || c > '9')) {
			return false
		}
	}
	return true
}

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// oneLine is s cut to n bytes, for an error message.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}
