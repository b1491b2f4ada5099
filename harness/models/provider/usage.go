package provider

import (
	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// The usage objects of the four APIs, read into a Usage: the providers read their answers'
// with these, and so does a gateway that passes answers through to an agent (harness/episode/gateway).

// ChatUsage reads a Chat Completions usage object. cache_write_tokens is OpenRouter's count of
// prompt tokens written to a provider's cache.
func ChatUsage(usage []byte) model.Usage {
	u := gjson.ParseBytes(usage)
	return model.Usage{Input: u.Get("prompt_tokens").Int(), Output: u.Get("completion_tokens").Int(),
		CachedRead:  u.Get("prompt_tokens_details.cached_tokens").Int(),
		CachedWrite: u.Get("prompt_tokens_details.cache_write_tokens").Int(),
		Reasoning:   u.Get("completion_tokens_details.reasoning_tokens").Int()}
}

// ResponsesUsage reads a Responses API usage object.
func ResponsesUsage(usage []byte) model.Usage {
	u := gjson.ParseBytes(usage)
	return model.Usage{Input: u.Get("input_tokens").Int(), CachedRead: u.Get("input_tokens_details.cached_tokens").Int(),
		Output: u.Get("output_tokens").Int(), Reasoning: u.Get("output_tokens_details.reasoning_tokens").Int()}
}

// AnthropicUsage reads a Messages API usage object. Input counts every prompt token: the API
// reports uncached input, cache reads and cache writes apart. thinking_tokens is the part of
// the output spent thinking.
func AnthropicUsage(usage []byte) model.Usage {
	u := gjson.ParseBytes(usage)
	read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	return model.Usage{Input: u.Get("input_tokens").Int() + read + write, CachedRead: read, CachedWrite: write,
		Output: u.Get("output_tokens").Int(), Reasoning: u.Get("output_tokens_details.thinking_tokens").Int()}
}

// GeminiUsage reads a Gemini usageMetadata object. The API counts the prompt with its cached
// part (cachedContentTokenCount) and the tool-use prompt apart from the prompt, and the
// thinking apart from the answer (candidatesTokenCount): Input adds the prompts, Output the
// answer and the thoughts, which are billed as output.
func GeminiUsage(usage []byte) model.Usage {
	u := gjson.ParseBytes(usage)
	thoughts := u.Get("thoughtsTokenCount").Int()
	return model.Usage{Input: u.Get("promptTokenCount").Int() + u.Get("toolUsePromptTokenCount").Int(),
		CachedRead: u.Get("cachedContentTokenCount").Int(), Output: u.Get("candidatesTokenCount").Int() + thoughts,
		Reasoning: thoughts}
}
