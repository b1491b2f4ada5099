package agents

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

// claudeCode is Anthropic's Claude Code CLI in print mode: one prompt, no questions asked, a
// JSON result on stdout. It calls Anthropic Messages at ANTHROPIC_BASE_URL with the key in
// ANTHROPIC_API_KEY. Its small background model (titles, summaries) and its sub-agents are
// pointed at the run's model through the variables that choose them; a name of the haiku
// family it still asks for is served by the run's model too. Its web tools are taken away
// (WebSearch is a call with Anthropic's server-side search, which the gateway refuses;
// WebFetch fetches from the sandbox, which has no network) and it starts no MCP server but
// those it is given (none), so that the model spends no calls on tools that fail.
var claudeCode = adapter{
	name:     "claude-code",
	pkg:      "@anthropic-ai/claude-code",
	program:  "claude",
	versionF: "--version",
	speaks:   []gateway.Protocol{gateway.Messages},
	mapped:   []string{"claude-*haiku*"},
	// Its runtime (Bun) reads /proc/self/maps, /proc/self/cgroup and /proc/stat at start-up
	// and aborts (SIGABRT) when they are refused.
	needsProc: true,
	launch: func(e Episode) Launch {
		cmd := e.Executable + ` --print --output-format json --dangerously-skip-permissions` +
			` --disallowedTools=WebSearch,WebFetch --strict-mcp-config --model "$` + ModelVar + `"`
		if e.MaxTurns > 0 {
			cmd += ` --max-turns "$` + MaxTurnsVar + `"`
		}
		cmd += ` "$` + PromptVar + `"`
		return Launch{Command: cmd, Env: []string{
			"ANTHROPIC_SMALL_FAST_MODEL=" + e.Model,
			"ANTHROPIC_DEFAULT_HAIKU_MODEL=" + e.Model,
			"ANTHROPIC_DEFAULT_SONNET_MODEL=" + e.Model,
			"ANTHROPIC_DEFAULT_OPUS_MODEL=" + e.Model,
			"CLAUDE_CODE_SUBAGENT_MODEL=" + e.Model,
			// No updates, telemetry, error reports or other calls beside the model's.
			"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
			"DISABLE_AUTOUPDATER=1",
			"DISABLE_TELEMETRY=1",
			"DISABLE_ERROR_REPORTING=1",
			// It refuses to skip permissions as uid 0 unless told it is in a sandbox, which
			// it is (Landlock without a mount namespace runs commands as uid 0 without
			// capabilities).
			"IS_SANDBOX=1",
		}}
	},
	final: claudeFinal,
}

// claudeFinal is the result text of the last JSON result line Claude Code printed.
func claudeFinal(stdout string) string {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		r := gjson.Parse(lines[i])
		if r.IsObject() && r.Get("type").String() == "result" {
			return r.Get("result").String()
		}
	}
	return ""
}
