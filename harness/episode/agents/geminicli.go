package agents

import (
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

// geminiSettings are the Gemini CLI's settings in the agent's home (~/.gemini/settings.json):
// the API key as its way in (GEMINI_API_KEY, the episode's token, at GOOGLE_GEMINI_BASE_URL,
// the gateway), and whatever would call elsewhere off: usage statistics (Clearcut, at
// play.googleapis.com, the one call 0.61.0 makes besides the model's when left on), telemetry,
// update checks, the IDE companion. Checkpointing is off too: it keeps a git copy of the
// workspace in the home. Its web tools are excluded: google_web_search is a model call with
// Google Search, web_fetch one with URL context (both provider-side tools, which the gateway
// refuses; for a private address web_fetch fetches from the sandbox, which has no network);
// the home being new, it has no MCP server.
const geminiSettings = `{"security":{"auth":{"selectedType":"gemini-api-key"},"folderTrust":{"enabled":false}},` +
	`"tools":{"exclude":["google_web_search","web_fetch"]},` +
	`"privacy":{"usageStatisticsEnabled":false},"telemetry":{"enabled":false},` +
	`"general":{"enableAutoUpdate":false,"enableAutoUpdateNotification":false,"checkpointing":{"enabled":false}},` +
	`"ide":{"enabled":false}}`

// geminiCLI is Google's Gemini CLI in headless mode: one prompt, every tool call approved
// (yolo), a JSON result on stdout. It calls the Gemini API at GOOGLE_GEMINI_BASE_URL with the
// key in GEMINI_API_KEY. Besides the model it is given, it names Gemini and Gemma models of its
// own for side calls (routing, summaries, web search, a "-customtools" variant of the main
// model): every gemini-* and gemma-* name is served by the run's model. It runs on Node.js,
// its script started by node with the options it needs in the sandbox (nodeRun): in its own
// process (no relaunch for a larger heap), the workspace trusted.
var geminiCLI = adapter{
	name:     "gemini-cli",
	pkg:      "@google/gemini-cli",
	program:  "gemini",
	versionF: "--version",
	speaks:   []gateway.Protocol{gateway.Gemini},
	mapped:   []string{"gemini-*", "gemma-*"},
	native:   hostNode("bundle/gemini.js"),
	node:     true,
	launch: func(e Episode) Launch {
		cmd := `mkdir -p "$HOME/.gemini" && printf '%s\n' ` + shellQuote(geminiSettings) +
			` > "$HOME/.gemini/settings.json" && ` +
			nodeRun(e.Executable) + ` --yolo --output-format json --model "$` + ModelVar + `" --prompt "$` + PromptVar + `"`
		return Launch{Command: cmd, Env: []string{
			"GEMINI_CLI_TRUST_WORKSPACE=true",
			"GEMINI_CLI_NO_RELAUNCH=true",
		}}
	},
	final: geminiFinal,
}

// geminiFinal is the response of the JSON result the Gemini CLI printed last (pretty-printed,
// over several lines, after anything else it printed).
func geminiFinal(stdout string) string {
	out := strings.TrimSpace(stdout)
	for {
		if r := gjson.Parse(out); gjson.Valid(out) && r.IsObject() {
			return r.Get("response").String()
		}
		i := strings.Index(out, "\n{")
		if i < 0 {
			return ""
		}
		out = out[i+1:]
	}
}
