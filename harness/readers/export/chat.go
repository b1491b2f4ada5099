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
// reply left out, made so that every reader of the format takes them (chatLine). Reasoning,
// usage, timing and the grade are not part of the shape: the ATIF export keeps them.
func Chat(run *runfolder.Run, e runfolder.Episode) (ChatEpisode, error) {
	ep, err := readEpisode(run, e)
	if err != nil {
		return ChatEpisode{}, err
	}
	if len(ep.calls) == 0 {
		return ChatEpisode{}, fmt.Errorf("%s: %w (no model call was recorded)", runfolder.EpisodeDir(run.Dir, e),
			ErrNoTrajectory)
	}
	line := chatLine{used: map[string]bool{}, pending: map[string][]string{}}
	for _, c := range ep.calls {
		for _, m := range c.Input {
			line.add(m)
		}
		if c.Error == "" {
			line.add(c.Reply)
		}
	}
	return ChatEpisode{Messages: line.messages, Tools: ep.tools}, nil
}

// chatLine builds an episode's messages so that a reader that checks them as the Chat
// Completions API does takes them: each call's id unique in the line (the model's, else one
// made of the message's place: a model may give none, or one twice), each tool result
// answering a call of the assistant message before it (calls of one id answered in order), and
// a result that answers none (its call is not in the recording) a user message holding its text.
type chatLine struct {
	messages []ChatMessage
	used     map[string]bool
	// pending maps a call's id, as the model gave it, to the ids of the latest assistant
	// message's calls with it that no result has answered yet.
	pending map[string][]string
}

func (l *chatLine) add(m model.Message) {
	c := ChatMessage{Role: m.Role, Content: m.Content}
	switch m.Role {
	case model.RoleAssistant:
		clear(l.pending)
		for i, tc := range m.ToolCalls {
			id := tc.ID
			if id == "" || l.used[id] {
				id = fmt.Sprintf("aa-grade-%d-%d", len(l.messages)+1, i+1)
			}
			l.used[id] = true
			l.pending[tc.ID] = append(l.pending[tc.ID], id)
			fn := ChatFunction{Name: tc.Name, Arguments: tc.Arguments}
			c.ToolCalls = append(c.ToolCalls, ChatToolCall{ID: id, Type: "function", Function: fn})
		}
	case model.RoleTool:
		ids := l.pending[m.ToolCallID]
		if len(ids) == 0 {
			c.Role = model.RoleUser
			break
		}
		c.ToolCallID, l.pending[m.ToolCallID] = ids[0], ids[1:]
	}
	l.messages = append(l.messages, c)
}
