package agents

import (
	"debug/elf"
	"encoding/json"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

// opencode is the opencode CLI in run mode: the prompt on its standard input, every
// permission granted, JSON events on stdout. It has a client for each of the gateway's
// protocols, so it is given a provider of its own, built on the AI SDK package of the protocol
// the run's model speaks, pointing at the gateway with the episode's token; its small model
// (titles, summaries) is the run's model. Its calls beside the model's are turned off: the
// update check, the model catalogue, sharing, plugins and LSP downloads by their settings, and
// the npm install of its plugin package into its configuration folder by making that folder
// read-only (it skips the install where it cannot write).
var opencode = adapter{
	name:     "opencode",
	pkg:      "opencode-ai",
	program:  "opencode",
	versionF: "--version",
	speaks:   []gateway.Protocol{gateway.Messages, gateway.Responses, gateway.Chat},
	native:   opencodeNative,
	// It is built on Bun, as Claude Code is: it reads /proc/self/maps, /proc/self/cgroup and
	// /sys/devices/system/cpu/online at start-up and aborts (SIGABRT) when they are refused.
	needsProc: true,
	launch: func(e Episode) Launch {
		// Its prompt arguments are joined and those with a space put in quotes; what comes on
		// its standard input, alone, is the prompt as it is. A title of its own spares the
		// call that would write one. Its log goes to stderr, which the trajectory keeps, and
		// not to a file in its home, which goes with the sandbox. Its grep and glob tools run
		// ripgrep, which it would download where the sandbox has none: without rg they are
		// taken away, so that the model does not spend calls on tools that fail.
		cmd := `{ command -v rg >/dev/null || export OPENCODE_PERMISSION='{"grep":"deny","glob":"deny"}'; } && ` +
			`mkdir -p "$HOME/.config/opencode" && chmod a-w "$HOME/.config/opencode" && printf '%s' "$` + PromptVar + `" | ` +
			e.Executable + ` run --format json --pure --title aa-grade --print-logs`
		return Launch{Command: cmd, Env: []string{
			"OPENCODE_CONFIG_CONTENT=" + opencodeConfig(e),
			// Project configuration files (in the workspace, which the model writes) could
			// point it elsewhere.
			"OPENCODE_DISABLE_PROJECT_CONFIG=1",
			"OPENCODE_DISABLE_AUTOUPDATE=1",
			"OPENCODE_DISABLE_MODELS_FETCH=1",
			"OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1",
			"OPENCODE_DISABLE_LSP_DOWNLOAD=1",
		}}
	},
	final: opencodeFinal,
}

// opencodeSDK is the AI SDK package, bundled in opencode, that calls each protocol.
var opencodeSDK = map[gateway.Protocol]string{
	gateway.Messages:  "@ai-sdk/anthropic",
	gateway.Responses: "@ai-sdk/openai",
	gateway.Chat:      "@ai-sdk/openai-compatible",
}

// opencodeProvider is the name of the provider opencode is given, the gateway.
const opencodeProvider = "aa-grade"

// opencodeConfig is opencode's configuration for e (OPENCODE_CONFIG_CONTENT): the gateway as
// its only provider, the run's model as its model and small model, no questions asked, no
// web fetch or web search tool (the sandbox has no network but the gateway), no MCP server,
// and no updates, sharing or snapshots (a git copy of the workspace in its home).
func opencodeConfig(e Episode) string {
	model := opencodeProvider + "/" + e.Model
	cfg := map[string]any{
		"provider": map[string]any{opencodeProvider: map[string]any{
			"npm":     opencodeSDK[e.Protocol],
			"options": map[string]string{"baseURL": e.Gateway + "/v1", "apiKey": e.Token},
			"models":  map[string]any{e.Model: map[string]any{}},
		}},
		"enabled_providers": []string{opencodeProvider},
		"model":             model,
		"small_model":       model,
		"permission":        map[string]string{"*": "allow", "webfetch": "deny", "websearch": "deny"},
		"mcp":               map[string]any{},
		"autoupdate":        false,
		"share":             "disabled",
		"snapshot":          false,
	}
	b, _ := json.Marshal(cfg) // strings, bools and maps of them always encode
	return string(b)
}

// opencodeFinal is the text of opencode's last message among its JSON events: the text parts
// of the message the last one belongs to, in order.
func opencodeFinal(stdout string) string {
	var id string
	var parts []string
	for line := range strings.Lines(stdout) {
		r := gjson.Parse(line)
		if r.Get("type").String() != "text" {
			continue
		}
		if m := r.Get("part.messageID").String(); m != id {
			id, parts = m, nil
		}
		parts = append(parts, r.Get("part.text").String())
	}
	return strings.Join(parts, "\n")
}

// opencodeNative is the native opencode in the package at root: bin/opencode.exe, where its
// install script puts the build this machine's processor runs (with AVX2 or the baseline),
// else, when that script did not run, the build of its platform's package (nested in root,
// or beside it). Only the folder of the one found is shown.
func opencodeNative(root string) (Install, string, error) {
	platform := "opencode-linux-" + map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH]
	for _, exe := range []string{
		filepath.Join(root, "bin", "opencode.exe"),
		filepath.Join(root, "node_modules", platform, "bin", "opencode"),
		filepath.Join(filepath.Dir(root), platform, "bin", "opencode"),
	} {
		if f, err := elf.Open(exe); err == nil {
			_ = f.Close() // read only: opening it was the check
			return Install{Paths: []string{filepath.Dir(exe)}, Executable: exe}, exe, nil
		}
	}
	return Install{}, "", fmt.Errorf("no native opencode for linux/%s in %s", runtime.GOARCH, root)
}
