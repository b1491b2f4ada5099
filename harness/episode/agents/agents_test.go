package agents

import (
	"debug/elf"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsoncheck"
)

func TestParse(t *testing.T) {
	for spec, want := range map[string]Agent{
		"claude-code":                 {Name: "claude-code"},
		" codex ":                     {Name: "codex"},
		"opencode":                    {Name: "opencode"},
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
	for _, spec := range []string{"", "claude", "gemini", "open-code", "command:", "command:   "} {
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
	if got := (Agent{Name: "opencode"}).Speaks(); len(got) != 3 {
		t.Errorf("opencode has a client for each of the OpenAI and Anthropic APIs: %v", got)
	}
	if got := (Agent{Name: "command", Command: "x"}).Speaks(); len(got) != 4 {
		t.Errorf("a program of the user's own may call every protocol: %v", got)
	}
}

// hostile is a prompt no quoting may change: quotes, expansions, a newline, a backslash.
const hostile = "Find the root cause.\n`rm -rf /` $(id) $HOME \"double\" 'single' \\n ; exit 3"

// fakeProgram writes an executable that prints each argument on a line of its own (NUL
// separated), the variables it was given and its standard input, to stand in for a CLI agent.
func fakeProgram(t *testing.T, dir, name string) {
	t.Helper()
	script := "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\nenv > \"$OUT/env\"\necho \"$HOME\" > \"$OUT/home\"\ncat > \"$OUT/stdin\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// launch runs what Launch says with bash, as the sandbox would, and returns the arguments,
// environment, home and standard input the program received.
func launch(t *testing.T, a Agent, e Episode) (args []string, env []string, home, stdin string) {
	t.Helper()
	bin, out, tmp := t.TempDir(), t.TempDir(), t.TempDir()
	fakeProgram(t, bin, "claude")
	fakeProgram(t, bin, "codex")
	fakeProgram(t, bin, "opencode")
	fakeProgram(t, bin, "gemini")
	fakeProgram(t, bin, "node") // the Gemini CLI's script is started by node
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
	return args, strings.Split(read("env"), "\n"), strings.TrimSpace(read("home")), read("stdin")
}

func episode() Episode {
	return Episode{Prompt: hostile, Model: "claude-test-1", Gateway: "http://127.0.0.1:4100", Token: "tok-0123456789abcdef", MaxTurns: 7}
}

func TestClaudeCodeLaunch(t *testing.T) {
	args, env, home, _ := launch(t, Agent{Name: "claude-code"}, episode())
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
	args, _, _, _ := launch(t, Agent{Name: "claude-code"}, e)
	if slices.Contains(args, "--max-turns") {
		t.Errorf("no cap, yet %q", args)
	}
}

func TestCodexLaunch(t *testing.T) {
	args, env, home, _ := launch(t, Agent{Name: "codex"}, episode())
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

// TestOpencodeLaunch: opencode gets the prompt whole on its standard input, a provider of its
// own on the gateway with the AI SDK package of each protocol, the run's model as its model and
// small model, every permission, and no calls beside the model's.
func TestOpencodeLaunch(t *testing.T) {
	for p, sdk := range map[gateway.Protocol]string{gateway.Messages: "@ai-sdk/anthropic", gateway.Responses: "@ai-sdk/openai", gateway.Chat: "@ai-sdk/openai-compatible"} {
		e := episode()
		e.Protocol = p
		args, env, home, stdin := launch(t, Agent{Name: "opencode"}, e)
		if !slices.Equal(args, []string{"run", "--format", "json", "--pure", "--title", "aa-grade", "--print-logs"}) || stdin != hostile {
			t.Errorf("%s: arguments %q, the prompt on stdin %q", p, args, stdin)
		}
		var cfg string
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "OPENCODE_CONFIG_CONTENT="); ok {
				cfg = v
			}
		}
		c := gjson.Parse(cfg)
		provider := c.Get("provider.aa-grade")
		if !gjson.Valid(cfg) {
			t.Fatalf("%s: the configuration is not JSON: %s", p, cfg)
		}
		if n := len(c.Get("provider").Map()); n != 1 {
			t.Errorf("%s: %d providers, want the gateway alone: %s", p, n, cfg)
		}
		if !provider.Get("models.claude-test-1").IsObject() {
			t.Errorf("%s: the provider lacks the run's model: %s", p, cfg)
		}
		jsoncheck.Fields(t, p.String(), c, map[string]string{
			"provider.aa-grade.npm": sdk, "provider.aa-grade.options.baseURL": "http://127.0.0.1:4100/v1",
			"provider.aa-grade.options.apiKey": "tok-0123456789abcdef", "enabled_providers": `["aa-grade"]`,
			"model": "aa-grade/claude-test-1", "small_model": "aa-grade/claude-test-1",
			"permission.*": "allow", "permission.webfetch": "deny", "autoupdate": "false", "share": "disabled", "snapshot": "false",
		})
		for _, want := range []string{"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_SHARE=1",
			"OPENCODE_DISABLE_DEFAULT_PLUGINS=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_PROJECT_CONFIG=1"} {
			if !slices.Contains(env, want) {
				t.Errorf("%s: the environment lacks %s", p, want)
			}
		}
		// Where it cannot write, it installs no npm package.
		if info, err := os.Stat(filepath.Join(home, ".config", "opencode")); err != nil || info.Mode().Perm()&0o222 != 0 {
			t.Errorf("%s: its configuration folder should be read-only: %v, %v", p, info, err)
		}
	}
}

// TestOpencodeWithoutRipgrep: opencode's grep and glob tools, which need rg, are taken away
// where the sandbox has no rg, and left where it has.
func TestOpencodeWithoutRipgrep(t *testing.T) {
	denied := `OPENCODE_PERMISSION={"grep":"deny","glob":"deny"}`
	// A PATH of the few programs the launch and the fake opencode run, and of rg or not,
	// whatever this machine has.
	dir := t.TempDir()
	for _, tool := range []string{"bash", "mkdir", "chmod", "cat", "env"} {
		found, err := exec.LookPath(tool)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(found, filepath.Join(dir, tool)); err != nil {
			t.Fatal(err)
		}
	}
	fakeProgram(t, dir, "opencode")
	for _, withRg := range []bool{false, true} {
		if withRg {
			fakeProgram(t, dir, "rg")
		}
		out := t.TempDir()
		cmd := exec.Command(filepath.Join(dir, "bash"), "-c", Agent{Name: "opencode"}.Launch(episode()).Script())
		cmd.Env = []string{"PATH=" + dir, "TMPDIR=" + t.TempDir(), "OUT=" + out}
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, b)
		}
		env, err := os.ReadFile(filepath.Join(out, "env"))
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(string(env), denied+"\n"); got == withRg {
			t.Errorf("with rg %v: grep and glob denied %v", withRg, got)
		}
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
	// opencode 1.18.33's events (run --format json) of a call, its result and a final message.
	run, err := os.ReadFile(filepath.Join("testdata", "opencode-run.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := "The root cause is the cart service.\n```json\n{\"contributing_factors\":[{\"name\":\"otel-demo/Deployment/cart\"}]}\n```"
	if got := (Agent{Name: "opencode"}).FinalMessage(string(run)); got != want {
		t.Errorf("opencode's final message = %q", got)
	}
	// A message of two text parts is the two; an earlier message's text is not the last.
	parts := `{"type":"text","part":{"messageID":"msg_1","type":"text","text":"thinking aloud"}}
{"type":"tool_use","part":{"messageID":"msg_1","type":"tool","tool":"bash"}}
{"type":"text","part":{"messageID":"msg_2","type":"text","text":"Found it."}}
{"type":"text","part":{"messageID":"msg_2","type":"text","text":"[\"otel-demo/Service/cart\"]"}}
{"type":"step_finish","part":{"messageID":"msg_2","type":"step-finish","reason":"stop"}}`
	if got := (Agent{Name: "opencode"}).FinalMessage(parts); got != "Found it.\n[\"otel-demo/Service/cart\"]" {
		t.Errorf("opencode's final message of two parts = %q", got)
	}
	for _, a := range []Agent{{Name: "claude-code"}, {Name: "codex"}, {Name: "opencode"}, {Name: "command", Command: "x"}} {
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
		if adapters[name].node {
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
		if len(in.Paths) != 1 {
			t.Errorf("%s: paths shown %q, want one", name, in.Paths)
		} else {
			if !strings.HasPrefix(in.Executable, in.Paths[0]+"/") {
				t.Errorf("%s: the executable %s lies outside the path shown, %s", name, in.Executable, in.Paths[0])
			}
			if scope := strings.SplitN(pkg, "/", 2)[0]; !strings.Contains(in.Paths[0], scope) {
				t.Errorf("%s: the path shown %s is not of the package's scope, %s", name, in.Paths[0], scope)
			}
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

// TestOpencodeNative: the native opencode is the one its install script put in its package,
// else, where the script did not run (its bin/opencode.exe no program), its platform
// package's; only the folder of the one found is shown.
func TestOpencodeNative(t *testing.T) {
	self, err := os.Executable() // a native program to stand in for opencode's
	if err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(t.TempDir(), "node_modules", "opencode-ai")
	platform := filepath.Join(root, "node_modules", "opencode-linux-"+map[string]string{"amd64": "x64", "arm64": "arm64"}[runtime.GOARCH], "bin")
	for _, dir := range []string{filepath.Join(root, "bin"), platform} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := opencodeNative(root); err == nil {
		t.Error("a package with no native program gave one")
	}
	if err := os.WriteFile(filepath.Join(root, "bin", "opencode.exe"), []byte("placeholder until the install script runs\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(self, filepath.Join(platform, "opencode")); err != nil {
		t.Fatal(err)
	}
	wantNative(t, "without the install script", root, filepath.Join(platform, "opencode"))
	os.Remove(filepath.Join(root, "bin", "opencode.exe"))
	if err := os.Symlink(self, filepath.Join(root, "bin", "opencode.exe")); err != nil {
		t.Fatal(err)
	}
	wantNative(t, "installed", root, filepath.Join(root, "bin", "opencode.exe"))
}

// wantNative: opencodeNative finds exe in the package at root, and shows its folder alone.
func wantNative(t *testing.T, when, root, exe string) {
	t.Helper()
	in, _, err := opencodeNative(root)
	if err != nil {
		t.Fatalf("%s: %v", when, err)
	}
	if in.Executable != exe {
		t.Errorf("%s: runs %s, want %s", when, in.Executable, exe)
	}
	if !slices.Equal(in.Paths, []string{filepath.Dir(exe)}) {
		t.Errorf("%s: shows %q, want %s alone", when, in.Paths, filepath.Dir(exe))
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
	script := "#!/bin/bash\nexport RAN_NATIVE=1\nprintf '%s\\0' \"$@\" > \"$OUT/args\"\nenv > \"$OUT/env\"\necho \"$HOME\" > \"$OUT/home\"\ncat > \"$OUT/stdin\"\n"
	if err := os.WriteFile(filepath.Join(dir, "native"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		e := episode()
		e.Executable, e.AgentDir = filepath.Join(dir, "native"), "/opt/agent"
		args, env, _, _ := launch(t, Agent{Name: name}, e)
		if len(args) < 2 {
			t.Errorf("%s: the executable got %q, want 2 arguments or more", name, args)
		}
		ran := slices.Contains(env, "RAN_NATIVE=1")
		if adapters[name].node {
			ran = slices.Contains(args, e.Executable) // node runs the script
		}
		if !ran {
			t.Errorf("%s: %s was not run: %q", name, e.Executable, args)
		}
		if kv := AgentDirVar + "=/opt/agent"; !slices.Contains(env, kv) {
			t.Errorf("%s: the environment lacks %s: %v", name, kv, env)
		}
	}
	if _, env, _, _ := launch(t, Agent{Name: "codex"}, episode()); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, AgentDirVar+"=") }) {
		t.Errorf("%s set without an agent folder", AgentDirVar)
	}
}
