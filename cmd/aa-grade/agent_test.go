//go:build linux

package main

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// chatAgentSpec is the project's own chat agent as --agent takes it, run from the agent folder
// (--agent-dir examples/agents).
const chatAgentSpec = `command:python3 "$AA_GRADE_AGENT_DIR/chat_agent.py"`

// TestAgentRun: run --agent plays each episode with the agent, its calls through the gateway
// to the run's provider, to a graded result; run.json records the agent, the report says the
// run is not comparable, the key is nowhere in the run folder, and a resume with another agent
// is refused.
func TestAgentRun(t *testing.T) {
	key := fmt.Sprintf("sk-canary-%x", time.Now().UnixNano()) // not in the test binary, which the sandbox runs
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: 3, Command: "ls alerts | head -2", Answer: answer901}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=" + key}
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901", "--repeats", "2", "--out", out,
		"--agent-dir", filepath.Join(moduleRoot, "examples", "agents"), "--agent", chatAgentSpec}
	r := aaGrade(t, env, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stderr, chatAgentSpec+" calling openai/fake through the gateway") || !strings.Contains(r.stdout, "Episodes: 2 ok") {
		t.Errorf("stderr:\n%s\nstdout:\n%s", r.stderr, r.stdout)
	}
	if n := len(fake.Bodies()); n != 6 {
		t.Errorf("%d calls reached the provider, want 3 an episode", n)
	}
	h := gjson.Parse(readFile(t, filepath.Join(out, "run.json")))
	if h.Get("agent.spec").String() != chatAgentSpec {
		t.Errorf("run.json records the agent %s", h.Get("agent").Raw)
	}
	if p := h.Get("agent.protocol").String(); p != "OpenAI Chat Completions" {
		t.Errorf("run.json records the protocol %q", p)
	}
	if report := readFile(t, filepath.Join(out, "report.md")); !strings.Contains(report, "played the episodes (--agent)") {
		t.Errorf("report.md does not say an agent played the run:\n%s", report)
	}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(out, "results.jsonl"))), "\n") {
		if res := gjson.Parse(line); res.Get("status").String() != "ok" || res.Get("turns").Int() != 3 || res.Get("tokens.input").Int() == 0 {
			t.Errorf("result %s", line)
		}
	}
	// The key is in no file of the run folder, the trajectories read as text included.
	filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
	for _, repeat := range []string{"1", "2"} {
		tr, err := runfolder.OpenTrajectory(filepath.Join(out, "episodes", "Scenario-901", repeat))
		if err != nil {
			t.Fatal(err)
		}
		text, err := io.ReadAll(tr)
		tr.Close()
		if err != nil || bytes.Contains(text, []byte(key)) || !bytes.Contains(text, []byte(`"kind":"agent"`)) {
			t.Errorf("repeat %s's trajectory: %v; holds the key %v, ends with the agent's line %v", repeat, err,
				bytes.Contains(text, []byte(key)), bytes.Contains(text, []byte(`"kind":"agent"`)))
		}
	}
	r = aaGrade(t, env, append(args[:len(args)-1], "command:true")...)
	if r.code != 2 || !strings.Contains(r.stderr, "agent was") {
		t.Errorf("a resume with another agent: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentRunRefusals: an agent that cannot call the model, a model an agent cannot call,
// and flags of aa-grade's own loop are refused before anything runs (exit 2).
func TestAgentRunRefusals(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-x", "ANTHROPIC_API_KEY=sk-y"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "openai/m", "--agent", "gemini-cli"}, "expected claude-code, codex, or command:CMD"},
		{[]string{"--model", "openai/m", "--agent", "command:"}, "needs a program"},
		{[]string{"--model", "openai/m", "--agent", "claude-code"}, "speaks Anthropic Messages"},
		{[]string{"--model", "anthropic/m", "--agent", "codex"}, "speaks OpenAI Responses"},
		{[]string{"--model", "builtin/baseline", "--agent", "command:true"}, "calls a provider's API"},
		{[]string{"--model", "openai/m", "--agent", "command:true", "--loop", "lenient"}, "--loop"},
		{[]string{"--model", "openai/m", "--agent-timeout", "5m"}, "only with --agent"},
		{[]string{"--model", "openai/m", "--agent", "command:true", "--agent-timeout", "0s"}, "must be more than 0"},
		{[]string{"--model", "openai/m", "--agent-dir", "."}, "only with --agent"},
		{[]string{"--model", "openai/m", "--agent", "command:true", "--agent-dir", "no-such-folder"}, "--agent-dir"},
		{[]string{"--model", "openai/m", "--agent", "command:true", "--agent-dir", filepath.Join(moduleRoot, "go.mod")}, "not a folder"},
		{[]string{"--model", "openai/m", "--agent", "command:true", "--agent-dir", "/"}, "may not show"},
	} {
		r := aaGrade(t, env, append([]string{"run", "--dataset", "demo", "--out", filepath.Join(t.TempDir(), "run")}, c.args...)...)
		if r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
}

// readFile is the file's text.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
