// Package model is the provider-neutral vocabulary every model speaks and every run is written
// in: messages, tools, requests, replies, usage, prices, the Model interface, the events of a
// trajectory and the shell tool's arguments. It calls no provider (harness/models/provider
// does), so that the run folder, the loop and the readers that speak it never depend on the
// providers' HTTP clients.
package model

import (
	"context"
	"encoding/json"
	"errors"
)

// ErrContextOverflow is what a Model returns (wrapped) when the conversation no longer fits
// the model's context window: the loop then summarises the history and tries once more.
var ErrContextOverflow = errors.New("the conversation exceeds the model's context window")

// ErrModelSpec marks a --model value that names no usable model; the message says why. It is
// here, below every kind of model (a provider's, a preset, a replay), so that each marks its
// refusals alike.
var ErrModelSpec = errors.New("bad model")

// Roles of the messages of a conversation.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// ToolCall is one call the model asks for.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"` // JSON as the model wrote it: may be invalid
}

// Message is one message of the conversation, provider-neutral.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`   // assistant messages
	ToolCallID string     `json:"tool_call_id,omitempty"` // tool results
	IsError    bool       `json:"is_error,omitempty"`     // a tool result that reports a refusal
	// Opaque is what a provider must get back unchanged on later calls (thinking blocks and
	// their signatures, encrypted reasoning items).
	Opaque json.RawMessage `json:"opaque,omitempty"`
}

// Tool is a tool offered to the model.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"` // JSON schema
}

// Usage counts the tokens of one call. Input is every prompt token, cached ones included
// (CachedRead and CachedWrite are parts of it); Reasoning is part of Output. WebSearches and
// ServerTools count the uses of the tools a provider ran itself, which it bills apart from
// the tokens: only an agent run that allows them (run --allow-provider-tools) has any.
type Usage struct {
	Input       int64 `json:"input"`
	CachedRead  int64 `json:"cached_read"`
	CachedWrite int64 `json:"cached_write"`
	Output      int64 `json:"output"`
	Reasoning   int64 `json:"reasoning"`
	// WorstCase says some of these tokens are a call's worst case rather than its count: a call
	// through the gateway whose answer never said its usage counts its request's length and
	// output cap (harness/episode/gateway), so that it can never count as free.
	WorstCase   bool  `json:"worst_case,omitempty"`
	WebSearches int64 `json:"web_searches,omitempty"` // web searches the provider made
	ServerTools int64 `json:"server_tools,omitempty"` // uses of its other tools: fetches, code, MCP
}

// Add accumulates another call's usage.
func (u *Usage) Add(o Usage) {
	u.Input += o.Input
	u.CachedRead += o.CachedRead
	u.CachedWrite += o.CachedWrite
	u.Output += o.Output
	u.Reasoning += o.Reasoning
	u.WorstCase = u.WorstCase || o.WorstCase
	u.WebSearches += o.WebSearches
	u.ServerTools += o.ServerTools
}

// Request is one model call: the whole conversation and every tool (tool_choice auto).
type Request struct {
	Messages []Message
	Tools    []Tool // the shell tool, then the finish tool, named as the prompt set names them
	Summary  bool   // a call made only to summarise the history: it is not a turn
}

// Reply is the model's answer to one call.
type Reply struct {
	Message Message
	Usage   Usage
	// Cut says the reply stopped at the output cap (Chat Completions finish_reason length or
	// max_tokens, Anthropic stop_reason max_tokens, a Responses status incomplete): the
	// reference loop ends the episode on it, as the reference clients raise on it; the lenient
	// loop uses the reply as it is.
	Cut bool
}

// DefaultMaxTokens is the output cap, and the reference loop's summarisation base, when no
// preset or flag gives one: the max_tokens Stirrup 0.1.9's clients default to.
const DefaultMaxTokens = 64_000

// Model is anything that answers a conversation: a provider's API, the built-in baseline, a
// replay of a recorded run.
type Model interface {
	Complete(ctx context.Context, req Request) (Reply, error)
}

// EpisodeID names the episode a model call belongs to (a replay looks up its recording by it).
type EpisodeID struct {
	Task   string
	Repeat int
}

type episodeKey struct{}

// WithEpisode marks ctx as belonging to one episode.
func WithEpisode(ctx context.Context, id EpisodeID) context.Context {
	return context.WithValue(ctx, episodeKey{}, id)
}

// EpisodeFrom tells which episode ctx belongs to.
func EpisodeFrom(ctx context.Context) (EpisodeID, bool) {
	id, ok := ctx.Value(episodeKey{}).(EpisodeID)
	return id, ok
}
