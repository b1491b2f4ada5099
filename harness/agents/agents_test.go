package agents

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/gateway"
)

func TestParse(t *testing.T) {
	for spec, want := range map[string]Agent{
		"claude-code":                 {Name: "claude-code"},
		" codex ":                     {Name: "codex"},
		"gemini-cli":                  {Name: "gemini-cli"},
		"command:python3 my_agent.py": {Name: "command", Command: "python3 my_agent.py"},
		"command: ./run.sh --fast ":   {Name: "command", Command: "./run.sh --fast"},
	} {
		got, err := Parse(spec)
		if err != nil {
			t.Errorf("Parse(%q): %v", spec, err)
			continue
		}
		if got != want {
			t.Errorf("Parse(%q) = %+v, want %+v", spec, got, want)
		}
	}
	for _, spec := range []string{"", "claude", "gemini", "opencode", "command:", "command:   "} {
		_, err := Parse(spec)
		if !errors.Is(err, ErrAgentSpec) {
			t.Errorf("Parse(%q) = %v, want ErrAgentSpec", spec, err)
		}
	}
	if _, err := Parse("claude"); err == nil || !strings.Contains(err.Error(), "claude-code") {
		t.Errorf("the error should list the agents: %v", err)
	}
}

func TestSpeaks(t *testing.T) {
	if got := (Agent{Name: "claude-code"}).Speaks(); !slices.Equal(got, []gateway.Protocol{gateway.Messages}) {
		t.Errorf("claude-code speaks %v", got)
	}
	if got := (Agent{Name: "codex"}).Speaks(); !slices.Equal(got, []gateway.Protocol{gateway.Responses}) {
		t.Errorf("codex speaks %v", got)
	}
	if got := (Agent{Name: "command", Command: "x"}).Speaks(); len(got) != 4 {
		t.Errorf("a program of the user's own may call every protocol: %v", got)
	}
}

// hostile is a prompt no quoting may change: quotes, expansions, a newline, a backslash.
const hostile = "Find the root cause.\n`rm -rf /` $(id) $HOME \"double\" 'single' \\n ; exit 3"

// fakeProgram writes an executable that prints each argument on a line of its own (NUL
// separated) and the variables it was given, to stand in for a CLI agent.
func fakeProgram(t *testing.T, dir, name string) {
	t.Helper()
	script := "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\nenv > \"$OUT/env\"\necho \"$HOME\" > \"$OUT/home\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// launch runs what Launch says with bash, as the sandbox would, and returns the arguments
// and environment the program received.
func launch(t *testing.T, a Agent, e Episode) (args []string, env []string, home string) {
	t.Helper()
	bin, out, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fakeProgram(t, bin, "claude")
	fakeProgram(t, bin, "codex")
	fakeProgram(t, bin, "gemini")
	l := a.Launch(e)
	cmd := exec.Command("bash", "-c", l.Script())
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TMPDIR=" + tmp, "OUT=" + out}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", l.Script(), err, b)
	}
	read := func(name string) string {
		b, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	args = strings.Split(strings.TrimSuffix(read("args"), "\x00"), "\x00")
	return args, strings.Split(read("env"), "\n"), strings.TrimSpace(read("home"))
}

func episode() Episode {
	return Episode{Prompt: hostile, Model: "claude-test-1", Gateway: "http://127.0.0.1:4100", Token: "tok-0123456789abcdef", MaxTurns: 7}
}

func TestClaudeCodeLaunch(t *testing.T) {
	args, env, home := launch(t, Agent{Name: "claude-code"}, episode())
	if args[len(args)-1] != hostile {
		t.Errorf("the prompt arrived as %q", args[len(args)-1])
	}
	for _, want := range [][]string{{"--print"}, {"--output-format", "json"}, {"--model", "claude-test-1"}, {"--max-turns", "7"}, {"--dangerously-skip-permissions"}} {
		i := slices.Index(args, want[0])
		if i < 0 || !slices.Equal(args[i:i+len(want)], want) {
			t.Errorf("arguments %q lack %q", args, want)
		}
	}
	for _, want := range []string{"ANTHROPIC_BASE_URL=http://127.0.0.1:4100", "ANTHROPIC_API_KEY=tok-0123456789abcdef",
		"ANTHROPIC_SMALL_FAST_MODEL=claude-test-1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1", "DISABLE_AUTOUPDATER=1"} {
		if !slices.Contains(env, want) {
			t.Errorf("the environment lacks %s", want)
		}
	}
	if !strings.HasSuffix(home, "/agent-home") {
		t.Errorf("HOME = %q, want the agent's own folder in TMPDIR", home)
	}
}

func TestClaudeCodeWithoutTurnCap(t *testing.T) {
	e := episode()
	e.MaxTurns = 0
	args, _, _ := launch(t, Agent{Name: "claude-code"}, e)
	if slices.Contains(args, "--max-turns") {
		t.Errorf("no cap, yet %q", args)
	}
}

func TestCodexLaunch(t *testing.T) {
	args, env, home := launch(t, Agent{Name: "codex"}, episode())
	if args[0] != "exec" || args[len(args)-1] != hostile {
		t.Errorf("arguments %q: want exec first and the prompt last, intact", args)
	}
	for _, want := range []string{`model_provider=aa-grade`, `model_providers.aa-grade.base_url="http://127.0.0.1:4100/v1"`,
		`model_providers.aa-grade.env_key=AA_GRADE_TOKEN`, `model_providers.aa-grade.wire_api=responses`} {
		i := slices.Index(args, want)
		if i < 1 || args[i-1] != "-c" {
			t.Errorf("arguments %q lack -c %s", args, want)
		}
	}
	if !slices.Contains(env, "CODEX_HOME="+home+"/.codex") {
		t.Errorf("CODEX_HOME should be in the agent's home %s", home)
	}
	if !slices.Contains(env, "AA_GRADE_TOKEN=tok-0123456789abcdef") {
		t.Error("codex reads its key from AA_GRADE_TOKEN, which is missing")
	}
}

func TestCommandLaunch(t *testing.T) {
	out := t.TempDir()
	l := Agent{Name: "command", Command: `printf '%s' "$AA_GRADE_PROMPT" > "$OUT/prompt"; env > "$OUT/env"`}.Launch(episode())
	cmd := exec.Command("bash", "-c", l.Script())
	cmd.Env = []string{"PATH=/usr/bin:/bin", "TMPDIR=" + t.TempDir(), "OUT=" + out}
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	prompt, _ := os.ReadFile(filepath.Join(out, "prompt"))
	if string(prompt) != hostile {
		t.Errorf("the prompt arrived as %q", prompt)
	}
	env, _ := os.ReadFile(filepath.Join(out, "env"))
	for _, want := range []string{"OPENAI_BASE_URL=http://127.0.0.1:4100/v1", "OPENAI_API_KEY=tok-0123456789abcdef",
		"ANTHROPIC_BASE_URL=http://127.0.0.1:4100", "AA_GRADE_MODEL=claude-test-1", "AA_GRADE_MAX_TURNS=7", "AA_GRADE_GATEWAY=http://127.0.0.1:4100"} {
		if !strings.Contains(string(env), want+"\n") {
			t.Errorf("the environment lacks %s", want)
		}
	}
}

func TestFinalMessage(t *testing.T) {
	claude := `{"type":"system","subtype":"init"}
{"type":"result","subtype":"success","is_error":false,"num_turns":4,"result":"Done.\n` + "```json" + `\n{\"contributing_factors\":[{\"name\":\"otel-demo/Deployment/cart\"}]}\n` + "```" + `","total_cost_usd":0.1}`
	if got := (Agent{Name: "claude-code"}).FinalMessage(claude); !strings.Contains(got, `"otel-demo/Deployment/cart"`) || !strings.HasPrefix(got, "Done.\n") {
		t.Errorf("claude-code's final message = %q", got)
	}
	codex := `{"type":"thread.started","thread_id":"t1"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"first"}}
{"type":"item.completed","item":{"id":"item_2","type":"command_execution","command":"ls"}}
{"type":"item.completed","item":{"id":"item_3","type":"agent_message","text":"[\"otel-demo/Service/cart\"]"}}
{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}`
	if got := (Agent{Name: "codex"}).FinalMessage(codex); got != `["otel-demo/Service/cart"]` {
		t.Errorf("codex's final message = %q", got)
	}
	for _, a := range []Agent{{Name: "claude-code"}, {Name: "codex"}, {Name: "command", Command: "x"}} {
		if got := a.FinalMessage("Segmentation fault\n{not json"); got != "" {
			t.Errorf("%s: a crash's output has no final message, got %q", a, got)
		}
	}
}

// TestHostInstall: the CLIs installed on this machine are found with their package, and the
// executable to run is native (Codex's, not its Node.js launcher); the Gemini CLI's, on
// Node.js, is TestGeminiHostInstall's.
func TestHostInstall(t *testing.T) {
	for _, name := range Names() {
		a := Agent{Name: name}
		if a.NeedsNode() {
			continue
		}
		program, pkg := a.Program()
		if _, err := exec.LookPath(program); err != nil {
			t.Logf("%s is not installed here", program)
			continue
		}
		in, err := a.HostInstall()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(in.Paths) != 1 || !strings.HasPrefix(in.Executable, in.Paths[0]+"/") || !strings.Contains(in.Paths[0], strings.SplitN(pkg, "/", 2)[0]) {
			t.Errorf("%s: %+v: the executable should lie in the one path shown, of the package's scope", name, in)
		}
		if f, err := elf.Open(in.Executable); err != nil {
			t.Errorf("%s: %s is not native: %v", name, in.Executable, err)
		} else {
			f.Close()
		}
	}
	if _, err := (Agent{Name: "command", Command: "x"}).HostInstall(); !errors.Is(err, ErrNoHostInstall) {
		t.Errorf("a program of the user's own has no install: %v", err)
	}
	t.Setenv("PATH", t.TempDir())
	if _, err := (Agent{Name: "codex"}).HostInstall(); !errors.Is(err, ErrNoHostInstall) {
		t.Errorf("codex off PATH: %v", err)
	}
}

// TestLaunchExecutableAndAgentDir: an Install's executable is run in place of the program on
// PATH, whatever its path holds, and the agent folder is named to the agent.
func TestLaunchExecutableAndAgentDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "a dir with 'quotes' and $(spaces)")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	// The native program says it ran in what it records; the fake on PATH would not.
	script := "#!/bin/bash\nexport RAN_NATIVE=1\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\nenv > \"$OUT/env\"\necho \"$HOME\" > \"$OUT/home\"\n"
	if err := os.WriteFile(filepath.Join(dir, "native"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		e := episode()
		e.Executable, e.AgentDir = filepath.Join(dir, "native"), "/opt/agent"
		args, env, _ := launch(t, Agent{Name: name}, e)
		if len(args) < 2 || !slices.Contains(env, "RAN_NATIVE=1") || !slices.Contains(env, AgentDirVar+"=/opt/agent") {
			t.Errorf("%s: the executable got %q, the environment %v", name, args, env)
		}
	}
	if _, env, _ := launch(t, Agent{Name: "codex"}, episode()); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, AgentDirVar+"=") }) {
		t.Errorf("%s set without an agent folder", AgentDirVar)
	}
}
