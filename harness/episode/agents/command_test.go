package agents

import (
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestCommand: the live line shows the command line of the shell tool whatever a CLI calls
// it, else the tool's name.
func TestCommand(t *testing.T) {
	call := func(name, args string) model.ToolCall { return model.ToolCall{ID: "c", Name: name, Arguments: args} }
	for _, c := range []struct {
		name  string
		calls []model.ToolCall
		want  string
	}{
		{"no tool", nil, ""},
		{"Claude Code's Bash", []model.ToolCall{call("Bash", `{"command":"cat alerts.json","description":"read"}`)}, "cat alerts.json"},
		{"an argv wrapped in bash -lc", []model.ToolCall{call("shell", `{"command":["bash","-lc","ls -la"],"workdir":"/w"}`)}, "ls -la"},
		{"an argv", []model.ToolCall{call("shell", `{"command":["jq",".","a.json"]}`)}, "jq . a.json"},
		{"a line in cmd", []model.ToolCall{call("exec_command", `{"cmd":"grep -c x logs.txt"}`)}, "grep -c x logs.txt"},
		{"another tool", []model.ToolCall{call("Read", `{"file_path":"/w/a.json"}`)}, "Read"},
		{"arguments not JSON", []model.ToolCall{call("Bash", `{"command":`)}, "Bash"},
		{"the last call counts", []model.ToolCall{call("Bash", `{"command":"ls"}`), call("Bash", `{"command":"pwd"}`)}, "pwd"},
	} {
		if got := Command(model.Message{Role: model.RoleAssistant, ToolCalls: c.calls}); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestSettings: run.json's record of a CLI's adapter is its command line and its own
// variables, with no episode's values; a program of the user's own has none.
func TestSettings(t *testing.T) {
	claude, err := Parse("claude-code")
	if err != nil {
		t.Fatal(err)
	}
	cmd, env := claude.Settings(Episode{Model: "claude-x", MaxTurns: 30, Executable: "/opt/claude"})
	if !strings.HasPrefix(cmd, "'/opt/claude' --print") {
		t.Errorf("the command line %q does not start with the executable", cmd)
	}
	if !strings.Contains(cmd, `--max-turns "$`+MaxTurnsVar+`"`) {
		t.Errorf("the command line %q does not pass the turn cap", cmd)
	}
	if !slices.Contains(env, "ANTHROPIC_SMALL_FAST_MODEL=claude-x") {
		t.Errorf("the adapter's variables %q lack its background model", env)
	}
	if slices.ContainsFunc(env, func(kv string) bool {
		return strings.HasPrefix(kv, TokenVar+"=") || strings.HasPrefix(kv, PromptVar+"=")
	}) {
		t.Errorf("the adapter's variables %q hold an episode's own", env)
	}
	mine, err := Parse("command:python3 a.py")
	if err != nil {
		t.Fatal(err)
	}
	if cmd, env := mine.Settings(Episode{Model: "m"}); cmd != "" || env != nil {
		t.Errorf("a program of the user's own has settings %q %q", cmd, env)
	}
}
