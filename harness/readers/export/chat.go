package export

import (
	"encoding/json"
	"fmt"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// ChatEpisode is one line of the openai-jsonl export: an episode as the chat messages of
// OpenAI's Chat Completions API and the tools offered, the shape OpenAI's fine-tuning files and
// the tools that read them take ({"messages": [...], "tools": [...]}, nothing else).
type ChatEpisode struct {
	Messages []ChatMessage     `json:"messages"`
	Tools    []json.RawMessage `json:"tools,omitempty"`
}

// ChatMessage is a Chat Completions message.
type ChatMessage struct {
	Role       string         `json:"role"`
	Content    string         `json:"content"`
	ToolCalls  []ChatToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// ChatToolCall is a Chat Completions tool call.
type ChatToolCall struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function ChatFunction `json:"function"`
}

// ChatFunction is a tool call's function and its arguments, JSON as the model wrote them.
type ChatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Chat is the episode e of run as chat messages: every message once, in the order the model
// got them (the prompts, then each call's new messages and its reply), a failed call's empty
// reply left out. Reasoning, usage, timing and the grade are not part of the shape: the ATIF
// export keeps them.
func Chat(run *runfolder.Run, e runfolder.Episode) (ChatEpisode, error) {
	ep, err := readEpisode(run, e)
	if err != nil {
		return ChatEpisode{}, err
	}
	if len(ep.calls) == 0 {
		return ChatEpisode{}, fmt.Errorf("%s: %w (no model call was recorded)", runfolder.EpisodeDir(run.Dir, e),
			ErrNoTrajectory)
	}
	out := ChatEpisode{Tools: ep.tools}
	for _, c := range ep.calls {
		for _, m := range c.Input {
			out.Messages = append(out.Messages, chatMessage(m))
		}
		if c.Error == "" {
			out.Messages = append(out.Messages, chatMessage(c.Reply))
		}
	}
	return out, nil
}

func chatMessage(m model.Message) ChatMessage {
	c := ChatMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	for _, tc := range m.ToolCalls {
		c.ToolCalls = append(c.ToolCalls,
			ChatToolCall{ID: tc.ID, Type: "function", Function: ChatFunction{Name: tc.Name, Arguments: tc.Arguments}})
	}
	return c
}
