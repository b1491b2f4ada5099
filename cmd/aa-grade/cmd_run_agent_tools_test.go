//go:build linux

package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// webSearchAgent is a command: agent that asks the model, through the gateway, for the Chat
// API's web search (a tool of the provider's own), prints what it got, then writes the
// answer.
const webSearchAgent = `command:python3 -c 'import json,os,urllib.request,urllib.error
body = {"model": os.environ["AA_GRADE_MODEL"], "messages": [{"role": "user", "content": "look it up"}], "tools": [{"type": "web_search"}]}
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps(body).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
try:
    print("status", urllib.request.urlopen(req).status)
except urllib.error.HTTPError as e:
    print("status", e.code, e.read().decode())
json.dump(["otel-demo/ConfigMap/flagd-config", "otel-demo/Service/frontend"], open("agent_output.json", "w"))'`

// TestAgentRunProviderTools: an agent's call holding a tool the provider runs itself is
// refused (a 400 the agent reads, nothing reaches the provider, counted in the results) and
// the episode still ends graded; with --allow-provider-tools it passes, run.json records it,
// the reports say the run compares with no other, and a resume without the flag is refused.
func TestAgentRunProviderTools(t *testing.T) {
	fake := fakeProvider(t, fakemodel.Script{Turns: 1, Answer: answer901}, "sk-provider-tools")
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901", "--repeats", "1", "--out", out, "--agent", webSearchAgent}
	r := aaGrade(t, fake.env, args...)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if n := len(fake.Bodies()); n != 0 {
		t.Errorf("%d calls reached the provider, want none", n)
	}
	res := gjson.Parse(readFile(t, filepath.Join(out, "results.jsonl")))
	if got := res.Get("status").String(); got != "ok" {
		t.Errorf("status %q, want ok: %s", got, res.Raw)
	}
	if got := res.Get("provider_tools_refused").Int(); got != 1 {
		t.Errorf("provider_tools_refused %d, want 1: %s", got, res.Raw)
	}
	if trajectory := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1")); !strings.Contains(trajectory, "provider_tool_refused") {
		t.Errorf("the trajectory does not record the refusal")
	}

	allowed := filepath.Join(t.TempDir(), "allowed")
	r = aaGrade(t, fake.env, append(args[:len(args)-3], allowed, "--allow-provider-tools", "--agent", webSearchAgent)...)
	if r.code != 0 {
		t.Fatalf("with --allow-provider-tools: exit %d\n%s", r.code, r.stderr)
	}
	if n := len(fake.Bodies()); n != 1 {
		t.Fatalf("%d calls reached the provider, want the agent's one: %s", n, fake.Bodies())
	}
	if tool := gjson.GetBytes(fake.Bodies()[0], "tools.0.type").String(); tool != "web_search" {
		t.Errorf("the provider got the tool %q, want web_search", tool)
	}
	if !gjson.Get(readFile(t, filepath.Join(allowed, "run.json")), "agent.provider_tools").Bool() {
		t.Errorf("run.json does not record agent.provider_tools")
	}
	for _, report := range []string{"report.md", "report.html"} {
		if text := readFile(t, filepath.Join(allowed, report)); !strings.Contains(text, "--allow-provider-tools") {
			t.Errorf("%s does not say the run allowed the provider's tools", report)
		}
	}
	pages := filepath.Join(t.TempDir(), "pages")
	if r := aaGrade(t, nil, "view", "--out", pages, allowed); r.code != 0 {
		t.Fatalf("view --out: exit %d\n%s", r.code, r.stderr)
	}
	if index := readFile(t, filepath.Join(pages, "index.html")); !strings.Contains(index, "--allow-provider-tools") {
		t.Errorf("the viewer's runs page does not say the run allowed the provider's tools")
	}
	if text := readFile(t, filepath.Join(out, "report.md")); strings.Contains(text, "--allow-provider-tools") {
		t.Errorf("report.md of a run without the flag mentions it")
	}
	r = aaGrade(t, fake.env, append(args[:len(args)-3], allowed, "--agent", webSearchAgent)...)
	if r.code != 2 || !strings.Contains(r.stderr, "provider_tools was true, now false") {
		t.Errorf("a resume without --allow-provider-tools: exit %d\n%s", r.code, r.stderr)
	}
}
