//go:build linux

package main

import (
	"bytes"
	"encoding/json"
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

	"github.com/aa-grade/aa-grade/harness/atif"
	"github.com/aa-grade/aa-grade/harness/model"
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
	checkAgentRunReaders(t, out)
	r = aaGrade(t, env, append(args[:len(args)-1], "command:true")...)
	if r.code != 2 || !strings.Contains(r.stderr, "agent was") {
		t.Errorf("a resume with another agent: exit %d\n%s", r.code, r.stderr)
	}
}

// checkAgentRunReaders: the agent run's episodes (chat_agent.py's three calls) read as the
// loop's do: turn records of the agent's conversation, its end on the episode page after its
// turns, analyze's investigation, and valid exports.
func checkAgentRunReaders(t *testing.T, out string) {
	t.Helper()
	if kinds := checkTrajectories(t, out); kinds[model.KindTurn] != 6 || kinds[model.KindAgent] != 2 {
		t.Errorf("the trajectories' lines: %v, want 3 turns and the agent's end an episode", kinds)
	}
	tr, err := runfolder.OpenTrajectory(filepath.Join(out, "episodes", "Scenario-901", "1"))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	var turns []runfolder.TurnRecord
	for line := range runfolder.NewTrajectoryReader(tr, func(k model.EventKind) bool { return k == model.KindTurn }).Lines() {
		if rec, err := line.Turn(); err == nil && line.Whole {
			turns = append(turns, rec)
		}
	}
	if len(turns) != 3 {
		t.Fatalf("%d turn records, want one for each of the agent's 3 calls", len(turns))
	}
	first, second := turns[0], turns[1]
	calls := first.Reply.ToolCalls
	if first.Turn != 1 || len(first.Input) != 1 || first.Input[0].Role != model.RoleUser || !strings.Contains(first.Input[0].Content, "agent_output.json") ||
		len(calls) != 1 || !strings.Contains(calls[0].Arguments, "ls alerts | head -2") || first.Usage.Input == 0 {
		t.Errorf("the first turn %+v", first)
	}
	if in := second.Input; len(in) != 1 || in[0].Role != model.RoleTool || in[0].ToolCallID != calls[0].ID || !strings.Contains(in[0].Content, "exit status 0") {
		t.Errorf("the second turn's input, the first call's result: %+v", second.Input)
	}

	pages := filepath.Join(t.TempDir(), "pages")
	if r := aaGrade(t, nil, "view", "--out", pages, out); r.code != 0 {
		t.Fatalf("view --out: exit %d\n%s", r.code, r.stderr)
	}
	var page string
	filepath.WalkDir(pages, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, filepath.Join("Scenario-901", "1.html")) {
			page = readFile(t, path)
		}
		return err
	})
	turn3, end := strings.Index(page, `id="t3"`), strings.Index(page, "The agent ended")
	if !strings.Contains(page, "ls alerts | head -2") || turn3 < 0 || end < turn3 || !strings.Contains(page[end:], "exit 0") || !strings.Contains(page[end:], "finished") {
		t.Errorf("the episode page shows no turns, or not the agent's end after them:\n%s", page)
	}

	r := aaGrade(t, nil, "analyze", "--json", out)
	if r.code != 0 || gjson.Get(r.stdout, "0.episodes.#").Int() != 2 || gjson.Get(r.stdout, "0.episodes.0.first_hit_turn").Int() == 0 {
		t.Errorf("analyze: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := aaGrade(t, nil, "export", out, "--format", "atif"); r.code != 0 || !strings.Contains(r.stdout, "Exported 2 episodes") {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	schema := atifSchema(t)
	// The agent sent no system prompt: its document begins with the task (checkATIF expects
	// the loop's prompts).
	path := filepath.Join(out+"-atif", "Scenario-901", "1", atif.File)
	b := []byte(readFile(t, path))
	var doc atif.Trajectory
	if err := schema.Validate(b); err != nil || json.Unmarshal(b, &doc) != nil || atif.Check(&doc) != nil {
		t.Fatalf("%s is not a valid ATIF document: %v, %v", path, err, atif.Check(&doc))
	}
	results := 0
	for _, step := range doc.Steps {
		if step.Observation != nil {
			results += len(step.Observation.Results)
		}
	}
	if doc.Steps[0].Source != atif.SourceUser || results < 2 || !strings.Contains(string(b), "ls alerts | head -2") {
		t.Errorf("the export shows not the agent's conversation (%d results):\n%s", results, b)
	}
}

// TestAgentRunRefusals: an agent that cannot call the model, a model an agent cannot call,
// and flags of aa-grade's own loop are refused before anything runs (exit 2).
func TestAgentRunRefusals(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-x", "ANTHROPIC_API_KEY=sk-y", "GEMINI_API_KEY=sk-z"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "openai/m", "--agent", "gemini"}, "expected claude-code, codex, gemini-cli, or command:CMD"},
		{[]string{"--model", "openai/m", "--agent", "gemini-cli"}, "speaks Google Gemini"},
		{[]string{"--model", "google/m", "--agent", "codex"}, "speaks OpenAI Responses"},
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
