package loop

import (
	"context"
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// markedSet is a prompt set whose every text is its key in brackets followed by the
// placeholders the built-in text of the key has (the system and task prompts aside), with the
// tools named sh and done.
func markedSet(t *testing.T) *promptset.Set {
	builtin := map[string]string{}
	key := ""
	for line := range strings.Lines(string(promptset.Builtin().Format())) {
		if m := sectionHeader.FindStringSubmatch(strings.TrimSuffix(line, "\n")); m != nil {
			key = m[1]
			continue
		}
		builtin[key] += line
	}
	return builtinWith(t, func(key string) (string, bool) {
		switch key {
		case "shell_tool":
			return "sh", true
		case "finish_tool":
			return "done", true
		}
		text := "[" + key + "]"
		if key == "system" {
			text += " {{max_turns}} {{shell_tool}} {{finish_tool}}"
		}
		seen := map[string]bool{}
		for _, m := range placeholder.FindAllStringSubmatch(builtin[key], -1) {
			if !seen[m[1]] && m[1] != "end" && m[1] != "else" && key != "system" && key != "task" {
				seen[m[1]] = true
				text += " {{" + m[1] + "}}"
			}
		}
		return text, true
	})
}

// placeholder finds a {{name}} in a text, or an {{end}} or {{else}} (not an {{if name}}).
var placeholder = regexp.MustCompile(`{{\s*([a-z][a-z0-9_]*)\s*}}`)

// summarising plays back replies for turns and answers every summary request with notes.
type summarising struct{ script }

func (s *summarising) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	if req.Summary {
		s.requests = append(s.requests, req)
		return model.Reply{Message: model.Message{Content: "notes"}, Usage: model.Usage{Input: 10}}, nil
	}
	return s.script.Complete(ctx, req)
}

// sandboxDown is a sandbox whose Run fails for the command "fail", and whose ReadFile fails
// the failRead-th time it is called.
type sandboxDown struct {
	sandbox.Sandbox
	reads, failRead int
}

func (s *sandboxDown) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	if s.reads++; s.reads == s.failRead {
		return nil, os.ErrClosed
	}
	return s.Sandbox.ReadFile(ctx, name, limit)
}

func (s *sandboxDown) Run(ctx context.Context, cmd string, timeout time.Duration) (sandbox.Result, error) {
	if cmd == "fail" {
		return sandbox.Result{}, os.ErrClosed
	}
	return s.Sandbox.Run(ctx, cmd, timeout)
}

// TestEveryTextComesFromTheSet (issue 12, point 15) drives an episode through every case the
// harness answers (a turn with no call, warnings, summaries, shell results, a timeout, a cut
// output, a sandbox failure, bad calls, every finish refusal) under a set whose every text is
// marked: every message and tool definition the model gets is the set's, and every key shows.
func TestEveryTextComesFromTheSet(t *testing.T) {
	sh := func(id, cmd string) model.ToolCall {
		b, _ := json.Marshal(map[string]string{"cmd": cmd})
		return call(id, "sh", string(b))
	}
	done := func(id, args string) model.ToolCall { return call(id, "done", args) }
	m := &summarising{script{replies: []model.Message{
		{Content: "thinking aloud"},
		{ToolCalls: []model.ToolCall{call("a", "sh", `{"command": "ls"}`), call("b", "web", `{}`), sh("c", "fail"), sh("d", "yes | head -c 30000"),
			sh("e", "echo partial; sleep 5"), done("f", finishArgs)}},
		{ToolCalls: []model.ToolCall{done("g", finishArgs), done("h", finishArgs)}},
		{ToolCalls: []model.ToolCall{done("i", `{not json`)}},
		{ToolCalls: []model.ToolCall{sh("j", "echo 'not a diagnosis' > agent_output.json"), done("k", finishArgs)}},
		{ToolCalls: []model.ToolCall{sh("l", "rm agent_output.json && ln -s /etc/hostname agent_output.json"), done("m", finishArgs)}},
		{ToolCalls: []model.ToolCall{sh("n", "rm agent_output.json && mkfifo agent_output.json"), done("o", finishArgs)}},
		{ToolCalls: []model.ToolCall{sh("p", "rm agent_output.json && echo '"+diagnosis+"' > agent_output.json && mkfifo pipe"),
			done("q", `{"reason": "r", "paths": ["missing.txt"]}`)}},
		{ToolCalls: []model.ToolCall{done("r", `{"reason": "r", "paths": ["../x"]}`)}},
		{ToolCalls: []model.ToolCall{done("s", `{"reason": "r", "paths": ["pipe"]}`)}},
		{ToolCalls: []model.ToolCall{done("t", finishArgs)}}, // the sandbox fails to read agent_output.json
		{ToolCalls: []model.ToolCall{done("u", finishArgs)}},
	}}}
	e := lenientEpisode(t, m, 12) // the lenient loop's refusals use every text
	// Finish calls f, k, m, o, q, r and s read agent_output.json before t does.
	e.Prompts, e.Sandbox = markedSet(t), &sandboxDown{Sandbox: e.Sandbox, failRead: 8}
	e.CommandTimeout, e.ContextWindow = settings.Duration(time.Second), 150
	if out := e.Run(context.Background()); out.Status != grader.StatusOK || out.Turns != 12 {
		t.Fatalf("outcome = %+v", out)
	}
	seen := map[string]bool{}
	marker := regexp.MustCompile(`\[([a-z_]+)\]`)
	for _, req := range m.requests {
		for _, tool := range req.Tools {
			var params struct {
				Description string
				Properties  map[string]struct{ Description string }
			}
			json.Unmarshal(tool.Parameters, &params)
			texts := []string{tool.Description, params.Description}
			for _, p := range params.Properties {
				texts = append(texts, p.Description)
			}
			for _, text := range texts {
				if !strings.HasPrefix(text, "[") {
					t.Errorf("tool %s: a text not from the set: %q", tool.Name, text)
				}
				seen[marker.FindStringSubmatch(text)[1]] = true
			}
			if tool.Name != "sh" && tool.Name != "done" {
				t.Errorf("a tool is named %s", tool.Name)
			}
		}
		for _, msg := range req.Messages {
			if msg.Role == model.RoleAssistant && msg.ToolCalls != nil || msg.Content == "thinking aloud" {
				continue // the model's own
			}
			if !strings.HasPrefix(msg.Content, "[") {
				t.Errorf("a %s message not from the set: %q", msg.Role, msg.Content)
			}
			for _, mk := range marker.FindAllStringSubmatch(msg.Content, -1) {
				seen[mk[1]] = true
			}
		}
	}
	for line := range strings.Lines(string(promptset.Builtin().Format())) {
		m := sectionHeader.FindStringSubmatch(strings.TrimSuffix(line, "\n"))
		if m != nil && !seen[m[1]] && m[1] != "shell_tool" && m[1] != "finish_tool" {
			t.Errorf("the model never saw the text of %s", m[1])
		}
	}
	if first := m.requests[0].Messages; first[0].Content != "[system] 12 sh done" || first[1].Content != "[task]" {
		t.Errorf("the conversation opens with %+v", first[:2])
	}
}
