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

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
)

func TestGeminiCLILaunch(t *testing.T) {
	a, err := Parse("gemini-cli")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Speaks(), []gateway.Protocol{gateway.Gemini}) {
		t.Errorf("gemini-cli speaks %v, want Gemini", a.Speaks())
	}
	if !adapters[a.Name].node {
		t.Error("gemini-cli runs on Node.js, yet its adapter says not")
	}
	if a.NeedsProc() {
		t.Error("gemini-cli needs no /proc of its own, yet NeedsProc is true")
	}
	e := episode()
	e.Model = "gemini-test-1"
	args, env, home, _ := launch(t, a, e)
	// node gets the options for WebAssembly under the sandbox's cap on address space, then the
	// script the PATH finds.
	if len(args) < 4 {
		t.Fatalf("node's arguments %q: want its three options, then the path of gemini", args)
	}
	if want := []string{"--disable-wasm-trap-handler", "--wasm-max-mem-pages=8192", "--liftoff-only"}; !slices.Equal(args[:3], want) {
		t.Errorf("node's options %q, want %q", args[:3], want)
	}
	if filepath.Base(args[3]) != "gemini" || !filepath.IsAbs(args[3]) {
		t.Errorf("node runs %q, want the path of gemini", args[3])
	}
	i := slices.Index(args, "--prompt")
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("arguments %q: no --prompt and its value", args)
	}
	if args[i+1] != hostile {
		t.Errorf("the prompt arrived as %q", args[i+1])
	}
	for _, want := range [][]string{{"--yolo"}, {"--output-format", "json"}, {"--model", "gemini-test-1"}} {
		i := slices.Index(args, want[0])
		if i < 0 || !slices.Equal(args[i:i+len(want)], want) {
			t.Errorf("arguments %q lack %q", args, want)
		}
	}
	for _, want := range []string{"GOOGLE_GEMINI_BASE_URL=http://127.0.0.1:4100", "GEMINI_API_KEY=tok-0123456789abcdef",
		"GEMINI_CLI_TRUST_WORKSPACE=true", "GEMINI_CLI_NO_RELAUNCH=true"} {
		if !slices.Contains(env, want) {
			t.Errorf("the environment lacks %s", want)
		}
	}
	b, err := os.ReadFile(filepath.Join(home, ".gemini", "settings.json"))
	if err != nil {
		t.Fatal(err)
	}
	settings := gjson.ParseBytes(b)
	for path, want := range map[string]string{"security.auth.selectedType": "gemini-api-key", "privacy.usageStatisticsEnabled": "false",
		"telemetry.enabled": "false", "general.enableAutoUpdate": "false", "general.enableAutoUpdateNotification": "false", "ide.enabled": "false"} {
		if got := settings.Get(path); got.String() != want {
			t.Errorf("settings %s = %s, want %s (%s)", path, got.Raw, want, b)
		}
	}
	for _, name := range []string{"gemini-2.5-flash-lite", "gemini-3.1-pro-preview-customtools", "gemma-4-31b-it"} {
		if !slices.ContainsFunc(a.BackgroundModels(), func(p string) bool { m, _ := filepath.Match(p, name); return m }) {
			t.Errorf("the background model %s is not served", name)
		}
	}
}

func TestGeminiFinalMessage(t *testing.T) {
	a := Agent{Name: "gemini-cli"}
	out := "Loaded cached credentials.\n{\n  \"session_id\": \"s1\",\n  \"response\": \"Done.\\n[\\\"otel-demo/Service/cart\\\"]\",\n  \"stats\": {\n    \"models\": {}\n  }\n}\n"
	if got := a.FinalMessage(out); got != "Done.\n[\"otel-demo/Service/cart\"]" {
		t.Errorf("final message %q", got)
	}
	for _, bad := range []string{"Segmentation fault\n{not json", "", `{"error":{"type":"Error","message":"Invalid auth method selected.","code":41}}`} {
		if got := a.FinalMessage(bad); got != "" {
			t.Errorf("%q has no final message, got %q", bad, got)
		}
	}
}

// TestGeminiHostInstall: the Gemini CLI installed here is its package, shown with this
// machine's node, the script run; a node the sandbox's PATH would not find is refused.
func TestGeminiHostInstall(t *testing.T) {
	a := Agent{Name: "gemini-cli"}
	if _, err := exec.LookPath("gemini"); err != nil {
		t.Skip("gemini is not installed here")
	}
	in, err := a.HostInstall()
	if err != nil {
		t.Fatal(err)
	}
	if len(in.Paths) != 2 {
		t.Fatalf("install %+v: want the package and node shown", in)
	}
	if !strings.HasSuffix(in.Paths[0], "@google/gemini-cli") {
		t.Errorf("the package shown is %s", in.Paths[0])
	}
	if in.Executable != in.Paths[0]+"/bundle/gemini.js" {
		t.Errorf("the executable is %s, want the package's bundle/gemini.js", in.Executable)
	}
	if f, err := elf.Open(in.Paths[1]); err != nil || filepath.Base(in.Paths[1]) != "node" {
		t.Errorf("%s is not a native node: %v", in.Paths[1], err)
	} else {
		f.Close()
	}
	other := t.TempDir()
	if err := os.WriteFile(filepath.Join(other, "node"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", other+":"+os.Getenv("PATH"))
	if _, err := a.HostInstall(); !errors.Is(err, ErrNoHostInstall) || !strings.Contains(err.Error(), "PATH does not find it") {
		t.Errorf("a node off /usr/bin: %v", err)
	}
}

// TestGeminiVersionCommand: the version is asked of node with the CLI's options, and a CLI
// that is not there exits 127, as bash's own "not found", which sends the run to this
// machine's install.
func TestGeminiVersionCommand(t *testing.T) {
	a := Agent{Name: "gemini-cli"}
	bin, out := t.TempDir(), t.TempDir()
	fakeProgram(t, bin, "node")
	run := func(path string) int {
		c := exec.Command("bash", "-c", a.VersionCommand(""))
		c.Env, c.Stdin = []string{"PATH=" + path, "OUT=" + out}, strings.NewReader("")
		err := c.Run()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return exit.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	}
	if code := run(bin); code != 127 { // this machine's gemini may be in /usr/bin
		t.Errorf("no gemini on PATH: exit status %d, want 127", code)
	}
	fakeProgram(t, bin, "gemini")
	if code := run(bin + ":/usr/bin:/bin"); code != 0 {
		t.Fatalf("exit status %d", code)
	}
	b, err := os.ReadFile(filepath.Join(out, "args"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"--disable-wasm-trap-handler", "--wasm-max-mem-pages=8192", "--liftoff-only", filepath.Join(bin, "gemini"), "--version"}
	if args := strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00"); !slices.Equal(args, want) {
		t.Errorf("node got %q, want %q", args, want)
	}
}
