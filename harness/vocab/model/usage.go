package model

import "github.com/tidwall/gjson"

// The usage objects of the three APIs, read into a Usage: the providers read their answers'
// with these, and so does a gateway that passes answers through to an agent (harness/episode/gateway).

// ChatUsage reads a Chat Completions usage object. cache_write_tokens is OpenRouter's count of
// prompt tokens written to a provider's cache.
func ChatUsage(usage []byte) Usage {
	u := gjson.ParseBytes(usage)
	return Usage{Input: u.Get("prompt_tokens").Int(), Output: u.Get("completion_tokens").Int(),
		CachedRead: u.Get("prompt_tokens_details.cached_tokens").Int(), CachedWrite: u.Get("prompt_tokens_details.cache_write_tokens").Int(),
		Reasoning: u.Get("completion_tokens_details.reasoning_tokens").Int()}
}

// ResponsesUsage reads a Responses API usage object.
func ResponsesUsage(usage []byte) Usage {
	u := gjson.ParseBytes(usage)
	return Usage{Input: u.Get("input_tokens").Int(), CachedRead: u.Get("input_tokens_details.cached_tokens").Int(),
		Output: u.Get("output_tokens").Int(), Reasoning: u.Get("output_tokens_details.reasoning_tokens").Int()}
}

// AnthropicUsage reads a Messages API usage object. Input counts every prompt token: the API
// reports uncached input, cache reads and cache writes apart. thinking_tokens is the part of
// the output spent thinking.
func AnthropicUsage(usage []byte) Usage {
	u := gjson.ParseBytes(usage)
	read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	return Usage{Input: u.Get("input_tokens").Int() + read + write, CachedRead: read, CachedWrite: write,
		Output: u.Get("output_tokens").Int(), Reasoning: u.Get("output_tokens_details.thinking_tokens").Int()}
}
