package provider

import "strings"

// LiteLLMEffortBeta is the beta header LiteLLM 1.80.9 sends with output_config's effort
// (ANTHROPIC_EFFORT_BETA_HEADER, added by AnthropicModelInfo.get_anthropic_headers).
const LiteLLMEffortBeta = "effort-2025-11-24"

// litellmThinkingBudgets are the thinking budgets LiteLLM 1.80.9 gives a reasoning effort
// (AnthropicConfig._map_reasoning_effort, the DEFAULT_REASONING_EFFORT_*_THINKING_BUDGET
// constants); it refuses any other effort.
var litellmThinkingBudgets = map[string]int{"minimal": 128, "low": 1024, "medium": 2048, "high": 4096}

// litellmEfforts are the efforts LiteLLM 1.80.9 passes to Claude Opus 4.5 as output_config
// (AnthropicConfig.transform_request refuses the others).
var litellmEfforts = map[string]bool{"low": true, "medium": true, "high": true}

// effortFields is what a request carries for a reasoning effort: its body's fields and the
// beta header ("" for none).
type effortFields struct {
	body map[string]any
	beta string
}

// litellmEffort is what LiteLLM 1.80.9 makes of the reasoning effort Stirrup passes it for
// modelName (AnthropicConfig.map_openai_params): Claude Opus 4.5 gets output_config's effort
// and no thinking, with the effort beta header; every other model thinking with the effort's
// budget. ok is false for an effort LiteLLM raises on (max, xhigh, none, ...), which the
// reference client cannot send at all.
func litellmEffort(modelName, effort string) (fields effortFields, ok bool) {
	name := strings.ToLower(modelName)
	if strings.Contains(name, "opus-4-5") || strings.Contains(name, "opus_4_5") { // _is_claude_opus_4_5
		if !litellmEfforts[effort] {
			return effortFields{}, false
		}
		return effortFields{body: map[string]any{"output_config": block{"effort": effort}}, beta: LiteLLMEffortBeta}, true
	}
	budget, ok := litellmThinkingBudgets[effort]
	if !ok {
		return effortFields{}, false
	}
	return effortFields{body: map[string]any{"thinking": block{"type": "enabled", "budget_tokens": budget}}}, true
}

// effort is what a request of m carries for its reasoning effort. The lenient loop, and the
// reference loop for an effort LiteLLM refuses (the published Claude Opus 4.7 row's "max"),
// ask for adaptive thinking and output_config's effort, the API's own way to the efforts the
// presets name: a named departure (docs/fidelity.md), since the reference client could not
// send them at all.
func (m *Anthropic) effort() effortFields {
	if m.ReasoningEffort == "" {
		return effortFields{}
	}
	if m.Reference {
		if fields, ok := litellmEffort(m.Model, m.ReasoningEffort); ok {
			return fields
		}
	}
	return effortFields{body: map[string]any{"thinking": block{"type": "adaptive"},
		"output_config": block{"effort": m.ReasoningEffort}}}
}
