package provider

import (
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// Preset is a ready-made --model value for one published leaderboard row: the provider and
// model id, the reasoning effort the published run used, the context window and the token
// prices, so that one word reproduces the row's configuration. Model ids follow each
// provider's naming when the leaderboard was published and may need adjusting when a provider
// renames a model; a full PROVIDER/MODEL spec with flags does the same job.
type Preset struct {
	Name  string `json:"name"`
	Label string `json:"label"` // the leaderboard row, word for word (grader/leaderboard)
	Spec  string `json:"spec"`
	// ReasoningEffort is the effort of the published run in the provider's spelling; "" leaves
	// the provider's default.
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// ContextWindow is in tokens, as the provider advertises it (the lenient loop's summarisation
	// base).
	ContextWindow int64 `json:"context_window"`
	// MaxTokens is the output cap of every call and the reference loop's summarisation base:
	// Stirrup's default, since what the published runs' adapter passed is not public.
	MaxTokens int64 `json:"max_tokens"`
	// Prices are list prices read from PriceSource on PriceDate; nil when none could be sourced,
	// so that cost stays unknown instead of looking free.
	Prices      *model.Prices `json:"prices"`
	PriceSource string        `json:"price_source,omitempty"`
	PriceDate   string        `json:"price_date,omitempty"`
	PriceNote   string        `json:"price_note,omitempty"` // what the flat prices leave out
}

const googlePricing = "https://ai.google.dev/gemini-api/docs/pricing"

// Presets has one entry per published leaderboard row, in the leaderboard's order. Models
// without a native provider here go through OpenRouter, which forwards the reasoning effort.
// Each price was read from the provider's own pricing page (through dated transcriptions of
// it where the page itself was not at hand); where no single price could be sourced (DeepSeek
// bills peak and off-peak hours differently, Qwen3.7 Max by context length, and Gemma 4 has no
// first-party price, only hosts' prices that differ) Prices is nil.
var Presets = []Preset{
	{Name: "claude-opus-4-7-max", Label: "Claude Opus 4.7 (Adaptive Reasoning, Max Effort)",
		Spec: "anthropic/claude-opus-4-7", ReasoningEffort: "max", ContextWindow: 1_000_000,
		MaxTokens: model.DefaultMaxTokens,
		// Launch price (2026-04-16); the pricing page's row, cache prices included, reads the same
		// in its later copies.
		Prices:      &model.Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6.25, Output: 25},
		PriceSource: "https://platform.claude.com/docs/en/about-claude/pricing", PriceDate: "2026-04-16",
		PriceNote: "cache writes at the 5-minute rate, the cache the provider asks for"},
	{Name: "gpt-5.5-xhigh", Label: "GPT-5.5 (xhigh)",
		Spec: "openai/gpt-5.5", ReasoningEffort: "xhigh", ContextWindow: 1_000_000, MaxTokens: model.DefaultMaxTokens,
		// The pricing page as transcribed on 2026-05-04 (github.com/api-evangelist/openai, plans/).
		Prices:      &model.Prices{Input: 5, CachedRead: 0.5, Output: 30},
		PriceSource: "https://developers.openai.com/api/docs/pricing", PriceDate: "2026-05-04",
		PriceNote: "prompts over 272K tokens cost 2x input and 1.5x output; not counted"},
	{Name: "qwen3.7-max", Label: "Qwen3.7 Max",
		Spec: "openrouter/qwen/qwen3.7-max", ContextWindow: 1_000_000, MaxTokens: model.DefaultMaxTokens},
	{Name: "glm-5.1", Label: "GLM-5.1 (Reasoning)",
		Spec: "openrouter/z-ai/glm-5.1", ReasoningEffort: "high", ContextWindow: 202_752, MaxTokens: model.DefaultMaxTokens,
		// Z.ai's table as quoted on 2026-08-19, GLM-5.1's row equal to GLM-5.2's and GLM-5.3's.
		Prices:      &model.Prices{Input: 1.4, CachedRead: 0.26, Output: 4.4},
		PriceSource: "https://docs.z.ai/guides/overview/pricing", PriceDate: "2026-08-19",
		PriceNote: "Z.ai's own price; OpenRouter may route to another host at another price"},
	{Name: "gemini-3.5-flash-high", Label: "Gemini 3.5 Flash (high)",
		Spec: "openrouter/google/gemini-3.5-flash", ReasoningEffort: "high", ContextWindow: 1_000_000,
		MaxTokens: model.DefaultMaxTokens,
		// Google's page as read on 2026-09-20 (github.com/api-evangelist/gemini, plans/), as for 3.1 Pro.
		Prices:      &model.Prices{Input: 1.5, Output: 9},
		PriceSource: googlePricing, PriceDate: "2026-09-20",
		PriceNote: "no cache price sourced: cached reads count at the input price"},
	{Name: "deepseek-v4-pro-max", Label: "DeepSeek V4 Pro (Reasoning, Max Effort)",
		Spec: "openrouter/deepseek/deepseek-v4-pro", ReasoningEffort: "max", ContextWindow: 1_000_000,
		MaxTokens: model.DefaultMaxTokens},
	{Name: "gemma-4-31b", Label: "Gemma 4 31B (Reasoning)",
		Spec: "openrouter/google/gemma-4-31b-it", ReasoningEffort: "high", ContextWindow: 262_144,
		MaxTokens: model.DefaultMaxTokens},
	{Name: "gemini-3.1-pro-preview", Label: "Gemini 3.1 Pro Preview",
		Spec: "openrouter/google/gemini-3.1-pro-preview", ContextWindow: 1_000_000, MaxTokens: model.DefaultMaxTokens,
		Prices:      &model.Prices{Input: 2, Output: 12},
		PriceSource: googlePricing, PriceDate: "2026-09-20",
		PriceNote: "prompts over 200K tokens cost $4 input and $18 output, not counted; no cache price sourced: cached " +
			"reads count at the input price"},
}

// FindPreset returns the preset with this name.
func FindPreset(name string) (Preset, bool) {
	for _, p := range Presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// PresetNames lists the presets' names, in the leaderboard's order.
func PresetNames() []string {
	names := make([]string, len(Presets))
	for i, p := range Presets {
		names[i] = p.Name
	}
	return names
}

// Reasoning says what the provider is asked for, in words.
func (p Preset) Reasoning() string {
	switch {
	case p.ReasoningEffort == "":
		return "provider default"
	case strings.HasPrefix(p.Spec, "anthropic/"):
		return "adaptive, effort " + p.ReasoningEffort
	}
	return "effort " + p.ReasoningEffort
}
