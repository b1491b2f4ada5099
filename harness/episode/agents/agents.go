// Package agents names the agents `aa-grade run --agent` runs inside an episode's sandbox in
// place of aa-grade's own loop (the real CLI agents, and any program as command:CMD), and
// says how each is started: its command line, its environment, the protocol it calls the
// model gateway with, the background model names it uses, and where its final message is.
// It only describes; the runner starts the agent and serves the gateway.
package agents

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

// ErrAgentSpec marks an --agent value that names no agent; the message says why.
var ErrAgentSpec = errors.New("bad agent")

// CommandPrefix starts the spec of a program of the user's own: command:CMD.
const CommandPrefix = "command:"

// Agent is a parsed --agent value.
type Agent struct {
	// Name is the adapter: one of Names(), or "command".
	Name string
	// Command is the user's program line (command:CMD), run by bash in the workspace.
	Command string
}

// adapter is what aa-grade knows of one real CLI agent.
type adapter struct {
	name     string
	pkg      string             // the npm package that installs it
	program  string             // the executable it installs
	speaks   []gateway.Protocol // what it can call, the one it prefers first
	launch   func(Episode) Launch
	final    func(stdout string) string
	mapped   []string // path.Match patterns of the background model names the CLI may ask for
	versionF string   // the flag that prints its version
	// native finds, in the package folder, what to show and run where the sandbox shows the
	// host's install, and the native program that runs (nil: the program itself is native).
	native func(root string) (in Install, native string, err error)
	// needsProc: the CLI aborts where /proc of its own process is out of reach (landlock).
	needsProc bool
	// node: the CLI runs on Node.js, started by nodeRun.
	node bool
}

// adapters are the CLI agents, by name: Claude Code (Anthropic Messages), Codex (the Responses
// API), the Gemini CLI (Google's Gemini API, on Node.js) and opencode (whichever of the
// OpenAI and Anthropic APIs the run's model speaks).
var adapters = map[string]adapter{
	"claude-code": claudeCode,
	"codex":       codex,
	"gemini-cli":  geminiCLI,
	"opencode":    opencode,
}

// Names lists the CLI agents --agent takes, sorted.
func Names() []string {
	names := make([]string, 0, len(adapters))
	for n := range adapters {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Forms says what --agent takes, for help texts and errors.
func Forms() string { return strings.Join(Names(), ", ") + ", or " + CommandPrefix + "CMD" }

// Parse reads an --agent value.
func Parse(spec string) (Agent, error) {
	spec = strings.TrimSpace(spec)
	if cmd, ok := strings.CutPrefix(spec, CommandPrefix); ok {
		cmd = strings.TrimSpace(cmd)
		if cmd == "" {
			return Agent{}, fmt.Errorf("%w: %s needs a program after the colon (command:'python3 my_agent.py')", ErrAgentSpec,
				CommandPrefix)
		}
		return Agent{Name: "command", Command: cmd}, nil
	}
	if _, ok := adapters[spec]; ok {
		return Agent{Name: spec}, nil
	}
	return Agent{}, fmt.Errorf("%w: %q (expected %s)", ErrAgentSpec, spec, Forms())
}

// String is the agent as --agent takes it.
func (a Agent) String() string {
	if a.Name == "command" {
		return CommandPrefix + a.Command
	}
	return a.Name
}

// Speaks says which protocols the agent may call the gateway with: the CLI's (opencode has a
// client for each of the OpenAI and Anthropic APIs), all four for a program of the user's
// own, which picks.
func (a Agent) Speaks() []gateway.Protocol {
	if ad, ok := adapters[a.Name]; ok {
		return ad.speaks
	}
	return []gateway.Protocol{gateway.Chat, gateway.Responses, gateway.Messages, gateway.Gemini}
}

// BackgroundModels are the model names, as path.Match patterns, that the agent asks for
// besides the run's model (a CLI's small model for titles and summaries); the gateway serves
// them with the run's model, so that an episode calls one model only.
func (a Agent) BackgroundModels() []string { return adapters[a.Name].mapped }

// Program is the executable a CLI agent needs in the sandbox and the npm package that
// installs it ("" for command:).
func (a Agent) Program() (program, npmPackage string) {
	ad := adapters[a.Name]
	return ad.program, ad.pkg
}

// NeedsProc says whether the agent cannot start without reading /proc/self (the Bun runtime
// of Claude Code and opencode aborts when /proc/self/cgroup and /proc/self/maps are refused).
func (a Agent) NeedsProc() bool { return adapters[a.Name].needsProc }

// VersionCommand is a command line that prints the agent's version ("" for command:), run as
// executable (an Install's; "": the program on the sandbox's PATH).
func (a Agent) VersionCommand(executable string) string {
	ad, ok := adapters[a.Name]
	if !ok {
		return ""
	}
	exe := shellQuote(cmp.Or(executable, ad.program))
	if ad.node {
		return nodeRun(exe) + " " + ad.versionF
	}
	return exe + " " + ad.versionF
}

// nodeFlags let Node.js run WebAssembly (the Gemini CLI's tree-sitter parsers) under the
// sandbox's cap on address space (8 GiB), and end without waiting. Its default bounds checks
// reserve 10 GiB a module (--disable-wasm-trap-handler, Node.js 20.15 or later, turns them
// off). Each WebAssembly memory reserves address space for its maximum (4 GiB): under the cap
// most reservations fail, and V8 tries each size three times, a full collection before each,
// then a smaller one, seconds of CPU at every start; at 512 MiB a memory the Gemini CLI's five
// fit. V8's optimizing compiler is kept off WebAssembly: it took 2 s on two large functions of
// the parsers, in the background, which Node.js waits for before it exits, after the answer.
const nodeFlags = "--disable-wasm-trap-handler --wasm-max-mem-pages=8192 --liftoff-only"

// nodeRun is a command line that runs the Node.js CLI exe (a bash word: a name on PATH, or
// its script's path) with node and nodeFlags on its command line (NODE_OPTIONS refuses V8's
// options); it exits 127, as bash does, when there is no such CLI. Node.js gets an empty
// OpenSSL configuration (OPENSSL_CONF): the landlock sandbox shows this machine's
// /etc/ssl/openssl.cnf but refuses to open it, and Node.js stops at start-up on a
// configuration it cannot read (a missing one, as in bwrap, it takes as empty). The CLI calls
// nothing over TLS: the gateway is plain HTTP on 127.0.0.1.
func nodeRun(exe string) string {
	return `{ cli=$(command -v ` + exe + `) || exit 127; } && OPENSSL_CONF=/dev/null node ` + nodeFlags + ` "$cli"`
}

// Episode is what one start of the agent is given.
type Episode struct {
	Prompt   string // the task prompt of the run's prompt set
	Model    string // the run's model, the name the gateway allows
	Gateway  string // the gateway's root inside the sandbox: http://127.0.0.1:PORT
	Token    string // the episode's token, the only credential the gateway accepts
	MaxTurns int    // model calls the episode may make (0: no cap of the agent's own)
	// Protocol is the one of Speaks() the gateway serves the run's model with, for a CLI that
	// speaks several and must be told which client to use.
	Protocol gateway.Protocol
	// Executable is the CLI to run (an Install's), "" for the program on the sandbox's PATH.
	Executable string
	// AgentDir is where the sandbox shows the user's agent folder ("" when there is none).
	AgentDir string
}

// Launch is how to start the agent: variables, then a bash command line that uses them, run
// in the workspace. Script joins them into the one command the sandbox runs. The prompt is
// handed over in a variable (PromptVar), so that no quoting of the command line alters it.
type Launch struct {
	Command string
	Env     []string // NAME=value
}

// Script is the bash command that exports the variables and runs the command.
func (l Launch) Script() string {
	var b strings.Builder
	for _, kv := range l.Env {
		name, value, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", name, shellQuote(value))
	}
	b.WriteString(l.Command)
	return b.String()
}

// shellQuote is s as one bash word, whatever it holds.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// The variables every agent gets (docs/agents.md is the contract).
const (
	PromptVar   = "AA_GRADE_PROMPT"
	ModelVar    = "AA_GRADE_MODEL"
	GatewayVar  = "AA_GRADE_GATEWAY"
	TokenVar    = "AA_GRADE_TOKEN"
	MaxTurnsVar = "AA_GRADE_MAX_TURNS"
	AgentDirVar = "AA_GRADE_AGENT_DIR"
)

// homeSetup gives the agent a writable home of its own in the sandbox's temporary folder, for
// the state CLIs keep there, out of the workspace the grader reads.
const homeSetup = `export HOME="${TMPDIR:-/tmp}/agent-home" && mkdir -p "$HOME" && `

// Launch says how to start the agent for e.
func (a Agent) Launch(e Episode) Launch {
	env := []string{
		PromptVar + "=" + e.Prompt,
		ModelVar + "=" + e.Model,
		GatewayVar + "=" + e.Gateway,
		TokenVar + "=" + e.Token,
		fmt.Sprintf("%s=%d", MaxTurnsVar, e.MaxTurns),
		// What the providers' own clients read, so that a program built on an SDK needs
		// no setting of its own.
		"OPENAI_BASE_URL=" + e.Gateway + "/v1",
		"OPENAI_API_KEY=" + e.Token,
		"ANTHROPIC_BASE_URL=" + e.Gateway,
		"ANTHROPIC_API_KEY=" + e.Token,
		"GOOGLE_GEMINI_BASE_URL=" + e.Gateway,
		"GEMINI_API_KEY=" + e.Token,
	}
	if e.AgentDir != "" {
		env = append(env, AgentDirVar+"="+e.AgentDir)
	}
	if ad, ok := adapters[a.Name]; ok {
		e.Executable = shellQuote(cmp.Or(e.Executable, ad.program)) // as the adapter's command line starts
		l := ad.launch(e)
		l.Command = homeSetup + l.Command
		l.Env = append(env, l.Env...)
		return l
	}
	return Launch{Command: homeSetup + a.Command, Env: env}
}

// Settings are how a CLI agent is started for episodes like e, for run.json: its command
// line and the variables its adapter sets beside those every agent gets; none for command:.
func (a Agent) Settings(e Episode) (command string, env []string) {
	ad, ok := adapters[a.Name]
	if !ok {
		return "", nil
	}
	e.Executable = shellQuote(cmp.Or(e.Executable, ad.program))
	l := ad.launch(e)
	return l.Command, l.Env
}

// FinalMessage is the agent's last message to the user in what it printed, for CLIs that
// print one ("" when there is none, or for command:, whose answer is its file).
func (a Agent) FinalMessage(stdout string) string {
	if ad, ok := adapters[a.Name]; ok {
		return ad.final(stdout)
	}
	return ""
}
