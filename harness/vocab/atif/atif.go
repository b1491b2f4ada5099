// Package atif is the Agent Trajectory Interchange Format, ATIF (Harbor's RFC 0001, the
// version Version), as aa-grade writes and reads it: the document's types, the rules a
// document must keep beyond its JSON shape (Check), and the reading of trajectories another
// harness wrote (Find, Read, Diagnosis), so that their answers can be graded.
//
// A document is one agent run: its steps in order (the prompts, each model reply with its
// reasoning, tool calls and the tool results that answered them) with token counts and cost.
// Every object refuses fields the format does not name, so what the format has no field for
// goes into the objects' extra.
package atif

import (
	"encoding/json"
	"strings"
)

// Version is the ATIF version aa-grade writes: the newest Harbor's models define that this
// project checked its exports against (docs/formats.md).
const Version = "ATIF-v1.7"

// ExportAgent is the agent aa-grade's export names in its documents (aa-grade's loop drove the
// model): its tool results are worded as the built-in prompt set's shell results, and its
// extra records the episode's grade.
const ExportAgent = "aa-grade"

// The sources of a step.
const (
	SourceSystem = "system"
	SourceUser   = "user"
	SourceAgent  = "agent"
)

// Trajectory is one ATIF document.
type Trajectory struct {
	SchemaVersion string        `json:"schema_version"`
	SessionID     string        `json:"session_id,omitempty"`    // the run, shared by related documents
	TrajectoryID  string        `json:"trajectory_id,omitempty"` // this document
	Agent         Agent         `json:"agent"`
	Steps         []Step        `json:"steps"`
	Notes         string        `json:"notes,omitempty"`
	FinalMetrics  *FinalMetrics `json:"final_metrics,omitempty"`
	Extra         Extra         `json:"extra,omitempty"`
}

// Model is the model a document names: its agent's, else its first agent step's; "" for none.
func (t *Trajectory) Model() string {
	if t.Agent.ModelName != "" {
		return t.Agent.ModelName
	}
	for _, s := range t.Steps {
		if s.ModelName != "" {
			return s.ModelName
		}
	}
	return ""
}

// Extra is what an object carries beyond the format's fields.
type Extra map[string]any

// Agent names the agent system and its default model.
type Agent struct {
	Name      string `json:"name"`
	Version   string `json:"version"`
	ModelName string `json:"model_name,omitempty"`
	// ToolDefinitions are the tools offered, each in OpenAI's function-calling shape
	// ({"type": "function", "function": {"name", "description", "parameters"}}).
	ToolDefinitions []json.RawMessage `json:"tool_definitions,omitempty"`
	Extra           Extra             `json:"extra,omitempty"`
}

// Step is a system prompt, a user message, or one agent turn: the model's reply, the tool calls
// it made and the results that answered them.
type Step struct {
	StepID    int    `json:"step_id"` // 1, 2, ... in order
	Timestamp string `json:"timestamp,omitempty"`
	Source    string `json:"source"`
	// The fields below up to Metrics, Observation aside, belong to agent steps only.
	ModelName        string       `json:"model_name,omitempty"`
	ReasoningEffort  string       `json:"reasoning_effort,omitempty"`
	Message          Text         `json:"message"`
	ReasoningContent string       `json:"reasoning_content,omitempty"`
	ToolCalls        []ToolCall   `json:"tool_calls,omitempty"`
	Observation      *Observation `json:"observation,omitempty"`
	Metrics          *Metrics     `json:"metrics,omitempty"`
	// IsCopiedContext marks a step sent again (a shortened history's), not new.
	IsCopiedContext bool `json:"is_copied_context,omitempty"`
	// LLMCallCount is the model calls the step stands for (since v1.7): 1 for a reply; 0 for
	// an agent step no model wrote, which then has no metrics and no reasoning.
	LLMCallCount *int  `json:"llm_call_count,omitempty"`
	Extra        Extra `json:"extra,omitempty"`
}

// ToolCall is one call a reply made. Its ID is unique in its step, and the results that
// answer it name it (ObservationResult.SourceCallID).
type ToolCall struct {
	ToolCallID   string          `json:"tool_call_id"`
	FunctionName string          `json:"function_name"`
	Arguments    json.RawMessage `json:"arguments"` // a JSON object, {} for none
	Extra        Extra           `json:"extra,omitempty"`
}

// Observation is what the environment answered a step with.
type Observation struct {
	Results []ObservationResult `json:"results"`
}

// ObservationResult is one tool result, or the outcome of an action that was no tool call
// (SourceCallID empty).
type ObservationResult struct {
	SourceCallID string `json:"source_call_id,omitempty"`
	Content      *Text  `json:"content,omitempty"`
	Extra        Extra  `json:"extra,omitempty"`
}

// Metrics are one model call's token counts and cost. PromptTokens counts every prompt token,
// CachedTokens (cache hits) among them; CompletionTokens include reasoning.
type Metrics struct {
	PromptTokens     *int64   `json:"prompt_tokens,omitempty"`
	CompletionTokens *int64   `json:"completion_tokens,omitempty"`
	CachedTokens     *int64   `json:"cached_tokens,omitempty"`
	CostUSD          *float64 `json:"cost_usd,omitempty"`
	Extra            Extra    `json:"extra,omitempty"`
}

// FinalMetrics are the whole run's totals.
type FinalMetrics struct {
	TotalPromptTokens     *int64   `json:"total_prompt_tokens,omitempty"`
	TotalCompletionTokens *int64   `json:"total_completion_tokens,omitempty"`
	TotalCachedTokens     *int64   `json:"total_cached_tokens,omitempty"`
	TotalCostUSD          *float64 `json:"total_cost_usd,omitempty"`
	TotalSteps            *int     `json:"total_steps,omitempty"`
	Extra                 Extra    `json:"extra,omitempty"`
}

// Text is a message or a tool result: written as a string; read from a string or from the
// list of content parts ATIF allows since v1.6, whose text parts are joined (an image part
// has no text an answer could be read from).
type Text string

// UnmarshalJSON reads a string or a list of content parts.
func (t *Text) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*t = Text(s)
		return nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	var texts []string
	for _, p := range parts {
		if p.Type == "text" {
			texts = append(texts, p.Text)
		}
	}
	*t = Text(strings.Join(texts, "\n"))
	return nil
}
