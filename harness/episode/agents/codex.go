package agents

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

// codex is OpenAI's Codex CLI in exec mode: one prompt, no approvals, JSON events on stdout.
// It is given a provider of its own pointing at the gateway, over the Responses API, with the
// episode's token as the key it reads from the environment. Its own sandbox is off: the
// episode's sandbox holds it, and nesting one is refused there. Its web search (the Responses
// API's web_search tool, on by default, which the gateway refuses) is off, and it has no MCP
// server.
var codex = adapter{
	name:     "codex",
	pkg:      "@openai/codex",
	program:  "codex",
	versionF: "--version",
	speaks:   []gateway.Protocol{gateway.Responses},
	native:   codexNative,
	launch: func(e Episode) Launch {
		provider := "model_providers.aa-grade."
		cmd := `export CODEX_HOME="$HOME/.codex" && mkdir -p "$CODEX_HOME" && ` + e.Executable +
			` exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox` +
			` --model "$` + ModelVar + `"` +
			` -c model_provider=aa-grade` +
			` -c ` + provider + `name=aa-grade` +
			` -c "` + provider + `base_url=\"$` + GatewayVar + `/v1\""` +
			` -c ` + provider + `env_key=` + TokenVar +
			` -c ` + provider + `wire_api=responses` +
			` -c 'web_search="disabled"' -c 'mcp_servers={}'` +
			` "$` + PromptVar + `"`
		return Launch{Command: cmd}
	},
	final: codexFinal,
}

// codexFinal is the text of the last agent message among Codex's JSON events.
func codexFinal(stdout string) string {
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		r := gjson.Parse(lines[i])
		if r.Get("type").String() == "item.completed" && r.Get("item.type").String() == "agent_message" {
			return r.Get("item.text").String()
		}
	}
	return ""
}
