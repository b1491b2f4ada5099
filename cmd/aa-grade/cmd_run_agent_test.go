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
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsoncheck"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
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
	fake := fakeProvider(t, fakemodel.Script{Turns: 3, Command: "ls alerts | head -2", Answer: answer901}, key)
	env := fake.env
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
	if dir := h.Get("agent.dir").String(); dir != filepath.Join(moduleRoot, "examples", "agents") {
		t.Errorf("run.json records the agent folder %q", dir)
	}
	if cmd := h.Get("agent.command"); cmd.Exists() {
		t.Errorf("run.json records an adapter's command line for a program of the user's own: %s", cmd.Raw)
	}
	if report := readFile(t, filepath.Join(out, "report.md")); !strings.Contains(report, "played the episodes (--agent)") {
		t.Errorf("report.md does not say an agent played the run:\n%s", report)
	}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, filepath.Join(out, "results.jsonl"))), "\n") {
		res := gjson.Parse(line)
		if got := res.Get("status").String(); got != "ok" {
			t.Errorf("result of status %q, want ok: %s", got, line)
		}
		if got := res.Get("turns").Int(); got != 3 {
			t.Errorf("result of %d turns, want 3: %s", got, line)
		}
		if res.Get("tokens.input").Int() == 0 {
			t.Errorf("result of no input tokens: %s", line)
		}
		if res := gjson.Parse(line); res.Get("tool_calls").Int() == 0 {
			t.Errorf("the result counts no tool calls of the agent's model: %s", line)
		}
	}
	// The gateway's calls are in the ledger, one line each, with the usage the results count
	// and no cost (the run has no prices).
	run, err := runfolder.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	var results int64
	for _, res := range run.Results {
		results += res.Tokens.Input
	}
	switch spent := run.Spend; {
	case spent == nil:
		t.Errorf("no %s", runfolder.SpendFile)
	case spent.Calls != 6:
		t.Errorf("%d calls in the ledger, want the 6 that reached the provider", spent.Calls)
	case spent.Tokens.Input != results:
		t.Errorf("the ledger counts %d input tokens, the results %d", spent.Tokens.Input, results)
	case spent.CostUSD != nil:
		t.Errorf("the ledger's cost is $%v at unknown prices, want unknown", *spent.CostUSD)
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
		if err != nil {
			t.Errorf("repeat %s's trajectory: %v", repeat, err)
		}
		if bytes.Contains(text, []byte(key)) {
			t.Errorf("repeat %s's trajectory holds the key", repeat)
		}
		if !bytes.Contains(text, []byte(`"kind":"agent"`)) {
			t.Errorf("repeat %s's trajectory has no line of the agent's end", repeat)
		}
	}
	checkAgentRunReaders(t, out)
	r = aaGrade(t, env, append(args[:len(args)-1], "command:true")...)
	if r.code != 2 || !strings.Contains(r.stderr, "agent was") {
		t.Errorf("a resume with another agent: exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentRunOpencode: run --agent opencode with an OpenAI-style model plays the episode
// with the real opencode over Chat Completions, its answer the diagnosis in its final message
// (it writes no agent_output.json), graded; run.json records its version and protocol.
func TestAgentRunOpencode(t *testing.T) {
	if _, err := exec.LookPath("opencode"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("opencode is not installed under CI (npm install -g opencode-ai)")
		}
		t.Skip("opencode is not installed (npm install -g opencode-ai)")
	}
	final := "The flag change broke the frontend.\n```json\n" + `["otel-demo/ConfigMap/flagd-config", "otel-demo/Service/frontend"]` + "\n```"
	srv := httptest.NewServer(&fakecli.Server{Script: fakecli.Script{Command: "ls | head -3", Final: final}})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=sk-x"},
		"run", "--dataset", "demo", "--model", "openai/m1", "--tasks", "901", "--repeats", "1", "--out", out, "--agent", "opencode")
	if r.code != 0 || !strings.Contains(r.stdout, "Episodes: 1 ok") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	h := gjson.Parse(readFile(t, filepath.Join(out, "run.json")))
	if h.Get("agent.version").String() != "1.18.33" || h.Get("agent.protocol").String() != "OpenAI Chat Completions" {
		t.Errorf("run.json records the agent %s", h.Get("agent").Raw)
	}
	// Its adapter's settings: the command line, and its configuration for the protocol the
	// run called, with the gateway's address and no episode's token.
	if cmd := h.Get("agent.command").String(); !strings.Contains(cmd, " run --format json") {
		t.Errorf("run.json records the command line %q", cmd)
	}
	var config string
	for _, kv := range h.Get("agent.env").Array() {
		if v, ok := strings.CutPrefix(kv.String(), "OPENCODE_CONFIG_CONTENT="); ok {
			config = v
		}
	}
	if sdk := gjson.Get(config, "provider.aa-grade.npm").String(); sdk != "@ai-sdk/openai-compatible" {
		t.Errorf("run.json records the SDK %q in %s", sdk, config)
	}
	if base := gjson.Get(config, "provider.aa-grade.options.baseURL").String(); base != "http://127.0.0.1:7480/v1" {
		t.Errorf("run.json records the base URL %q", base)
	}
	if key := gjson.Get(config, "provider.aa-grade.options.apiKey").String(); key != "" {
		t.Errorf("run.json records a key %q", key)
	}
	res := gjson.Parse(strings.TrimSpace(readFile(t, filepath.Join(out, "results.jsonl"))))
	jsoncheck.Fields(t, "the result", res, map[string]string{"status": "ok", "turns": "2"})
	if res.Get("score").Float() <= 0 {
		t.Errorf("the result scores nothing: %s", res.Raw)
	}
}

// checkAgentRunReaders: the agent run's episodes (chat_agent.py's three calls) read as the
// loop's do: turn records of the agent's conversation, its end on the episode page after its
// turns, analyze's investigation, and valid exports in both formats.
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
	if first.Turn != 1 {
		t.Errorf("the first turn is number %d", first.Turn)
	}
	if first.Usage.Input == 0 {
		t.Errorf("the first turn has no input tokens: %+v", first.Usage)
	}
	if in := first.Input; len(in) != 1 || in[0].Role != model.RoleUser {
		t.Errorf("the first turn's input %+v, want the task, one user message", in)
	} else {
		textcheck.Has(t, "the first turn's input", in[0].Content, "agent_output.json")
	}
	if len(calls) != 1 {
		t.Fatalf("the first turn's calls %+v, want one", calls)
	}
	textcheck.Has(t, "the first turn's call", calls[0].Arguments, "ls alerts | head -2")
	if in := second.Input; len(in) != 1 || in[0].Role != model.RoleTool {
		t.Errorf("the second turn's input %+v, want the first call's result, one tool message", in)
	} else {
		if in[0].ToolCallID != calls[0].ID {
			t.Errorf("the second turn's input is the result of %q, want the first call, %q", in[0].ToolCallID, calls[0].ID)
		}
		textcheck.Has(t, "the second turn's input", in[0].Content, "exit status 0")
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
	textcheck.Has(t, "the episode page", page, "ls alerts | head -2", `id="t3"`, "The agent ended")
	if turn3, end := strings.Index(page, `id="t3"`), strings.Index(page, "The agent ended"); end < turn3 {
		t.Errorf("the episode page shows the agent's end (at %d) before the third turn (at %d)", end, turn3)
	} else if end >= 0 {
		textcheck.Has(t, "the episode page's end of the agent", page[end:], "exit 0", "finished")
	}

	r := aaGrade(t, nil, "analyze", "--json", out)
	if r.code != 0 {
		t.Errorf("analyze: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if n := gjson.Get(r.stdout, "0.episodes.#").Int(); n != 2 {
		t.Errorf("analyze: %d episodes, want 2:\n%s", n, r.stdout)
	}
	if gjson.Get(r.stdout, "0.episodes.0.first_hit_turn").Int() == 0 {
		t.Errorf("analyze: no first hit turn in the first episode:\n%s", r.stdout)
	}
	if r := aaGrade(t, nil, "export", out, "--format", "atif"); r.code != 0 || !strings.Contains(r.stdout, "Exported 2 episodes") {
		t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	schema := atifSchema(t)
	// The agent sent no system prompt: its document begins with the task (checkATIF expects
	// the loop's prompts).
	path := filepath.Join(exportOf(out, "atif"), "Scenario-901", "1", atif.File)
	b := []byte(readFile(t, path))
	var doc atif.Trajectory
	if err := schema.Validate(b); err != nil {
		t.Fatalf("%s does not follow the ATIF schema: %v", path, err)
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if err := atif.Check(&doc); err != nil {
		t.Fatalf("%s breaks ATIF's rules: %v", path, err)
	}
	results := 0
	for _, step := range doc.Steps {
		if step.Observation != nil {
			results += len(step.Observation.Results)
		}
	}
	if doc.Steps[0].Source != atif.SourceUser {
		t.Errorf("the export begins with a step of %s, want the user's (the task)", doc.Steps[0].Source)
	}
	if results < 2 {
		t.Errorf("the export shows %d results, want 2 or more", results)
	}
	textcheck.Has(t, "the export", string(b), "ls alerts | head -2")
	chat := filepath.Join(t.TempDir(), "chat")
	if r := aaGrade(t, nil, "export", out, "--format", "openai-jsonl", "--out", chat); r.code != 0 {
		t.Fatalf("export openai-jsonl: exit %d\n%s", r.code, r.stderr)
	}
	checkChat(t, chat, []string{"Scenario-901", "Scenario-901"})
}

// TestAgentRunRefusals: an agent that cannot call the model, a model an agent cannot call,
// and flags of aa-grade's own loop are refused before anything runs (exit 2).
func TestAgentRunRefusals(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_API_KEY=sk-x", "ANTHROPIC_API_KEY=sk-y", "GEMINI_API_KEY=sk-z", "OPENROUTER_API_KEY=sk-w"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--model", "openai/m", "--agent", "gemini"}, "expected claude-code, codex, gemini-cli, opencode, or command:CMD"},
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
		{[]string{"--model", "openai/m", "--allow-provider-tools"}, "only with --agent"},
		{[]string{"--model", "openrouter/openai/gpt-5:online", "--agent", "command:true"}, "searches the web on the provider's side"},
		{[]string{"--model", "openrouter/openai/gpt-5:online"}, "aa-grade's loop runs none of the provider's tools"},
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
