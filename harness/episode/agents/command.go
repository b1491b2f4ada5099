package agents

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// Command is what the last tool call of an agent's reply does, for the live line: the command
// line of a shell tool, as the CLIs name it in their arguments (Claude Code's Bash and opencode's
// bash take "command", Codex's shell an argv in "command" or a line in "cmd"), else the tool's
// name; "" when the reply calls no tool.
func Command(m model.Message) string {
	if len(m.ToolCalls) == 0 {
		return ""
	}
	c := m.ToolCalls[len(m.ToolCalls)-1]
	args := gjson.Parse(c.Arguments)
	for _, key := range []string{"command", "cmd"} {
		switch v := args.Get(key); {
		case v.Type == gjson.String:
			return v.String()
		case v.IsArray():
			return argvLine(v.Array())
		}
	}
	return c.Name
}

// argvLine is an argv as the line it runs: the script of `bash -lc SCRIPT` (how Codex wraps a
// command), else the words joined.
func argvLine(argv []gjson.Result) string {
	words := make([]string, len(argv))
	for i, w := range argv {
		words[i] = w.String()
	}
	if n := len(words); n == 3 && strings.HasPrefix(words[1], "-") && strings.HasSuffix(words[1], "c") {
		return words[2]
	}
	return strings.Join(words, " ")
}
