package provider

import (
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestCutReplies: each route marks a reply stopped at the output cap as its reference client
// raises on it (Chat Completions finish_reason length or max_tokens, Anthropic stop_reason
// max_tokens, a Responses status incomplete), and no other.
func TestCutReplies(t *testing.T) {
	chat := func(reason string) string {
		return `{"choices":[{"finish_reason":"` + reason + `","message":{"role":"assistant","content":"x"}}],"usage":{"prompt_tokens":1,"completion_tokens":1}}`
	}
	anthropic := func(reason string) string {
		return `{"content":[{"type":"text","text":"x"}],"stop_reason":"` + reason + `","usage":{"input_tokens":1,"output_tokens":1}}`
	}
	responses := func(status string) string {
		return `{"status":"` + status + `","output":[{"type":"message","content":[{"type":"output_text","text":"x"}]}],"usage":{"input_tokens":1,"output_tokens":1}}`
	}
	for _, tc := range []struct {
		name   string
		parse  func([]byte) (model.Reply, error)
		answer string
		cut    bool
	}{
		{"chat length", ReadChatAnswer, chat("length"), true},
		{"chat max_tokens", ReadChatAnswer, chat("max_tokens"), true},
		{"chat tool_calls", ReadChatAnswer, chat("tool_calls"), false},
		{"chat stop", ReadChatAnswer, chat("stop"), false},
		{"anthropic max_tokens", ReadAnthropicAnswer, anthropic("max_tokens"), true},
		{"anthropic tool_use", ReadAnthropicAnswer, anthropic("tool_use"), false},
		{"responses incomplete", ReadResponsesAnswer, responses("incomplete"), true},
		{"responses completed", ReadResponsesAnswer, responses("completed"), false},
	} {
		reply, err := tc.parse([]byte(tc.answer))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if reply.Cut != tc.cut {
			t.Errorf("%s: cut %v, want %v", tc.name, reply.Cut, tc.cut)
		}
		if reply.Message.Content != "x" {
			t.Errorf("%s: replied %q, want %q", tc.name, reply.Message.Content, "x")
		}
	}
}
