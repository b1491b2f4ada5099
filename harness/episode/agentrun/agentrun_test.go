package agentrun_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/guesttest"
)

func TestMain(m *testing.M) { guesttest.Main(m) }

// canary is the run's key: it must reach the provider and nothing inside the sandbox. It is
// drawn when the tests run, so that the test binary, which the sandbox runs as its agent, does
// not hold it.
var canary = fmt.Sprintf("sk-canary-%x", time.Now().UnixNano())

// backends are the isolating backends that work here, docker with the test image; under CI
// each must.
func backends(t testing.TB) []sandbox.Backend {
	var out []sandbox.Backend
	for _, b := range sandbox.Backends() {
		if b.Name() == sandbox.NameNone {
			continue
		}
		if d, ok := b.(*sandbox.Docker); ok {
			if d.Image = os.Getenv("AA_GRADE_TEST_IMAGE"); d.Image == "" {
				t.Logf("skipping docker: no AA_GRADE_TEST_IMAGE")
				continue
			}
		}
		if err := b.Available(); err != nil {
			if os.Getenv("CI") != "" && os.Geteuid() == 0 {
				t.Fatalf("backend %s unavailable under CI: %v", b.Name(), err)
			}
			t.Logf("skipping %s: %v", b.Name(), err)
			continue
		}
		t.Cleanup(func() { sandbox.Release(b) })
		out = append(out, b)
	}
	if len(out) == 0 {
		t.Skip("no isolating sandbox here")
	}
	return out
}

// examples is the folder of the project's own agents, shown to the sandbox as --agent-dir.
var examples, _ = filepath.Abs(filepath.Join("..", "..", "..", "examples", "agents"))

// exampleAgent is one of the project's own agents (examples/agents) as a command: agent, run
// from the agent folder the sandbox shows (play shows examples).
func exampleAgent(t *testing.T, name string, env ...string) agents.Agent {
	t.Helper()
	a, err := agents.Parse(agents.CommandPrefix + strings.Join(append(env, `python3 "$AA_GRADE_AGENT_DIR/`+name+`"`), " "))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// recorder keeps what the gateway records and what the agent ended with.
type recorder struct {
	mu     sync.Mutex
	events []model.Event
	ended  []runfolder.AgentRecord
	used   []model.Usage
	turns  []turn
}

// turn is a model call as the gateway told it.
type turn struct {
	req   model.Request
	reply model.Reply
	err   error
}

func (r *recorder) record(e model.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, e)
}

// play runs agent a in a fresh sandbox of b over a small snapshot, its calls going to the
// provider at baseURL speaking protocol p. The sandbox shows examples as the agent folder, and
// the host's install of a CLI the sandbox lacks, as a run does.
func play(t testing.TB, b sandbox.Backend, a agents.Agent, p gateway.Protocol, baseURL string, change func(*agentrun.Episode)) (loop.Outcome, *recorder) {
	t.Helper()
	_, install, err := agentrun.Version(context.Background(), b, a)
	if err != nil {
		t.Fatal(err)
	}
	return playWith(t, b, a, install, p, baseURL, change)
}

// playWith is play with the CLI's install already found (nil: the sandbox has the CLI).
func playWith(t testing.TB, b sandbox.Backend, a agents.Agent, install *agents.Install, p gateway.Protocol, baseURL string, change func(*agentrun.Episode)) (loop.Outcome, *recorder) {
	t.Helper()
	snap, scratch := t.TempDir(), t.TempDir()
	os.Chmod(snap, 0o755)
	os.WriteFile(filepath.Join(snap, "alerts.json"), []byte(`[{"alert":"HighLatency"}]`), 0o644)
	sb, err := b.Start(context.Background(), sandbox.Spec{Snapshot: snap, Scratch: scratch, Relay: agentrun.Relay(), Programs: install.Shown(), AgentDir: examples})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	rec := &recorder{}
	ep := &agentrun.Episode{Agent: a, Sandbox: sb, Settings: settings.Settings{MaxTurns: 10}, Timeout: 3 * time.Minute,
		Tools: sandbox.Tools{Commands: map[string]bool{"bash": true, "python3": true}},
		Gateway: gateway.Config{Model: "m1", Upstream: gateway.Upstream{Protocol: p, BaseURL: baseURL, APIKey: canary}, Record: rec.record,
			Turn: func(_ int, req model.Request, reply model.Reply, err error) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				rec.turns = append(rec.turns, turn{req, reply, err})
			},
			Used: func(u model.Usage) {
				rec.mu.Lock()
				defer rec.mu.Unlock()
				rec.used = append(rec.used, u)
			}},
		Ended: func(r runfolder.AgentRecord) { rec.ended = append(rec.ended, r) }, Install: install}
	if change != nil {
		change(ep)
	}
	return ep.Run(context.Background()), rec
}

// checkCalls: every call went to the provider with the run's key, the token never did, and
// each is recorded as a request and its answer.
func checkCalls(t *testing.T, out loop.Outcome, rec *recorder, calls int) {
	t.Helper()
	if out.Turns != calls || len(rec.used) != calls {
		t.Errorf("%d calls passed on, %d told, want %d", out.Turns, len(rec.used), calls)
	}
	var requests, responses int
	for _, e := range rec.events {
		switch e.Kind {
		case model.KindRequest:
			requests++
		case model.KindResponse:
			responses++
			if e.Status != http.StatusOK {
				t.Errorf("an answer of status %d: %s", e.Status, e.Body)
			}
		}
		if strings.Contains(fmt.Sprint(e), canary) {
			t.Errorf("the key is in the recorded event %+v", e)
		}
	}
	if requests != calls || responses != calls {
		t.Errorf("recorded %d requests and %d answers, want %d of each", requests, responses, calls)
	}
	if len(rec.ended) != 1 || rec.ended[0].ExitCode != 0 {
		t.Errorf("the agent's end: %+v", rec.ended)
	}
	checkToolCalls(t, out, rec)
}

// checkToolCalls: the outcome counts the tool calls of every reply passed on, and the agent
// made some.
func checkToolCalls(t *testing.T, out loop.Outcome, rec *recorder) {
	t.Helper()
	want := 0
	for _, tr := range rec.turns {
		want += len(tr.reply.Message.ToolCalls)
	}
	if want == 0 {
		t.Errorf("no reply of the %d turns calls a tool", len(rec.turns))
	}
	if out.ToolCalls != want {
		t.Errorf("the outcome counts %d tool calls, the replies make %d", out.ToolCalls, want)
	}
}

// TestChatAgent: the project's own agent over OpenAI Chat Completions with tools plays an
// episode to a graded answer on every backend, its calls through the gateway.
func TestChatAgent(t *testing.T) {
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: 3, Command: "cat alerts.json", Answer: []string{"shop/Deployment/cart"}}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			before := len(fake.Bodies())
			out, rec := play(t, b, exampleAgent(t, "chat_agent.py"), gateway.Chat, srv.URL+"/v1", nil)
			if out.Status != grader.StatusOK || !slices.Equal(out.Entities, []string{"shop/Deployment/cart"}) {
				t.Fatalf("outcome %+v; the agent printed %+v", out, rec.ended)
			}
			checkCalls(t, out, rec, 3)
			if bodies := fake.Bodies()[before:]; !strings.Contains(string(bodies[1]), "HighLatency") {
				t.Errorf("the second call does not carry the first command's output: %s", bodies[1])
			}
		})
	}
}

// TestMessagesAgent: the project's own agent over Anthropic Messages, streaming, plays an
// episode to a graded answer on every backend.
func TestMessagesAgent(t *testing.T) {
	fake := &fakecli.Server{Script: fakecli.Script{Command: `cat alerts.json && echo '["shop/Service/cart"]' > agent_output.json`, Final: "Done."}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			out, rec := play(t, b, exampleAgent(t, "messages_agent.py"), gateway.Messages, srv.URL, nil)
			if out.Status != grader.StatusOK || !slices.Equal(out.Entities, []string{"shop/Service/cart"}) {
				t.Fatalf("outcome %+v; the agent printed %+v", out, rec.ended)
			}
			checkCalls(t, out, rec, 2)
		})
	}
}

// TestKeyNeverInTheSandbox: the key is nowhere an agent can look (its environment, every
// process's, the files it can read); the token it holds is not the key.
func TestKeyNeverInTheSandbox(t *testing.T) {
	srv := httptest.NewServer(&fakemodel.Server{Script: fakemodel.Script{Turns: 2}})
	defer srv.Close()
	hunt := `found=0
for f in /proc/[0-9]*/environ /proc/[0-9]*/cmdline; do grep -qa "$KEY" "$f" 2>/dev/null && { echo "in $f"; found=1; }; done
env | grep -q "$KEY" && { echo "in env"; found=1; }
grep -rqa --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr "$KEY" / 2>/dev/null && { echo "in a file"; found=1; }
env | grep -q '^OPENAI_API_KEY=aag-' || { echo "no token"; found=1; }
exit $found`
	// The canary's halves are joined in the agent, so that its own command line does not hold it.
	cmd := fmt.Sprintf("KEY=%s\"%s\"\n%s", canary[:9], canary[9:], hunt)
	a, err := agents.Parse(agents.CommandPrefix + cmd)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends(t) {
		t.Run(b.Name(), func(t *testing.T) {
			out, rec := play(t, b, a, gateway.Chat, srv.URL+"/v1", nil)
			if len(rec.ended) != 1 || rec.ended[0].ExitCode != 0 {
				t.Fatalf("the key was found: %+v (outcome %+v)", rec.ended, out)
			}
		})
	}
}

// TestAgentFailures: an agent that crashes, hangs, asks for another model or answers nothing
// ends its episode with a status that says so, and what it printed is kept.
func TestAgentFailures(t *testing.T) {
	srv := httptest.NewServer(&fakemodel.Server{Script: fakemodel.Script{Turns: 2}})
	defer srv.Close()
	b := backends(t)[0]
	for _, c := range []struct {
		name, cmd string
		timeout   time.Duration
		status    string
		check     func(t *testing.T, out loop.Outcome, rec *recorder)
	}{
		{name: "crash", cmd: `echo "Traceback: boom" >&2; exit 3`, status: grader.StatusError, check: func(t *testing.T, out loop.Outcome, rec *recorder) {
			if !strings.Contains(rec.ended[0].Stderr, "Traceback: boom") || rec.ended[0].ExitCode != 3 {
				t.Errorf("the crash's output is not kept: %+v", rec.ended[0])
			}
		}},
		{name: "hang", cmd: `sleep 600`, timeout: 2 * time.Second, status: grader.StatusError, check: func(t *testing.T, out loop.Outcome, rec *recorder) {
			if !rec.ended[0].TimedOut || !strings.Contains(out.Err.Error(), "wall time") {
				t.Errorf("a hang: %+v, %v", rec.ended[0], out.Err)
			}
		}},
		{name: "silent", cmd: `echo nothing to say`, status: grader.StatusMissing},
		{name: "invalid answer", cmd: `echo '{"thoughts": 1}' > agent_output.json`, status: grader.StatusInvalid},
		{name: "other model", cmd: `python3 -c 'import json,os,urllib.request,urllib.error
req = urllib.request.Request(os.environ["OPENAI_BASE_URL"] + "/chat/completions", data=json.dumps({"model": "gpt-other", "messages": []}).encode(),
    headers={"Authorization": "Bearer " + os.environ["OPENAI_API_KEY"], "Content-Type": "application/json"})
try:
    urllib.request.urlopen(req)
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())'`, status: grader.StatusMissing, check: func(t *testing.T, out loop.Outcome, rec *recorder) {
			if !strings.Contains(rec.ended[0].Stdout, "404") || !strings.Contains(rec.ended[0].Stdout, `allows \"m1\" only`) {
				t.Errorf("another model should be a 404 naming the allowed one: %q", rec.ended[0].Stdout)
			}
			if out.Turns != 0 || len(rec.events) == 0 {
				t.Errorf("the refused attempt should be recorded and pass nothing on: %d calls, %d events", out.Turns, len(rec.events))
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, err := agents.Parse(agents.CommandPrefix + c.cmd)
			if err != nil {
				t.Fatal(err)
			}
			out, rec := play(t, b, a, gateway.Chat, srv.URL+"/v1", func(e *agentrun.Episode) {
				if c.timeout > 0 {
					e.Timeout = c.timeout
				}
			})
			if out.Status != c.status || len(rec.ended) != 1 {
				t.Fatalf("outcome %+v (%v), ended %+v; want status %s", out, out.Err, rec.ended, c.status)
			}
			if c.check != nil {
				c.check(t, out, rec)
			}
		})
	}
}

// TestTurnCap: an agent that keeps calling past --max-turns (here, told it may make 10 calls)
// is refused with a 400 at the fourth, and the episode ends at the cap.
func TestTurnCap(t *testing.T) {
	srv := httptest.NewServer(&fakemodel.Server{Script: fakemodel.Script{Turns: 50, Command: "true"}})
	defer srv.Close()
	b := backends(t)[0]
	out, rec := play(t, b, exampleAgent(t, "chat_agent.py", "AA_GRADE_MAX_TURNS=10"), gateway.Chat, srv.URL+"/v1", func(e *agentrun.Episode) { e.MaxTurns = 3 })
	if out.Status != grader.StatusMaxTurns {
		t.Errorf("status %s (%v), want %s", out.Status, out.Err, grader.StatusMaxTurns)
	}
	if out.Turns != 3 {
		t.Errorf("%d turns, want 3", out.Turns)
	}
	if rec.ended[0].ExitCode == 0 {
		t.Errorf("the agent exited 0, want 1: the example agent exits 1 on the refused fourth call")
	}
	if t.Failed() {
		t.Fatalf("outcome %+v, ended %+v", out, rec.ended)
	}
	if !strings.Contains(rec.ended[0].Stderr, "400") || !strings.Contains(rec.ended[0].Stderr, "cap") {
		t.Errorf("the refusal should say why: %q", rec.ended[0].Stderr)
	}
}

// TestVersion: a CLI agent's version is asked in the sandbox; one the sandbox lacks names its
// npm package.
func TestVersion(t *testing.T) {
	b := backends(t)[0]
	a := agents.Agent{Name: "codex"}
	v, _, err := agentrun.Version(context.Background(), b, a)
	if _, lookErr := exec.LookPath("codex"); lookErr != nil {
		if !errors.Is(err, agentrun.ErrNotInstalled) || !strings.Contains(err.Error(), "@openai/codex") {
			t.Errorf("codex is not installed here, yet Version = %q, %v", v, err)
		}
		return
	}
	if err != nil || !strings.Contains(v, "codex") {
		t.Errorf("Version = %q, %v", v, err)
	}
	v, in, err := agentrun.Version(context.Background(), b, agents.Agent{Name: "command", Command: "x"})
	if err != nil {
		t.Errorf("the version of a program of the user's own: %v", err)
	}
	if v != "" || in != nil {
		t.Errorf("a program of the user's own has no version, yet Version gives %q and the install %+v", v, in)
	}
}

// TestRealCLIs: the real Claude Code, Codex, opencode and Gemini CLIs (installed by .ci/run
// from npm, under /usr, which bwrap shows; docker's test image has none, nor Node.js, so the
// host's install, and its node for the Gemini CLI, is shown to it) play an episode to a graded
// answer through the gateway, against a scripted model speaking their protocols (opencode
// each of the OpenAI and Anthropic ones); a backend where one cannot run (landlock, for Claude
// Code, opencode and the Gemini CLI) refuses it up front. The model asks first for the CLI's
// web tool (issue 42): the CLI offers none, answers that call with an error and goes on; no
// call to the provider holds a tool the provider would run itself.
func TestRealCLIs(t *testing.T) {
	for _, c := range []struct {
		agent    string
		protocol gateway.Protocol
		base     string
		web      string // the CLI's web tool, which it must not offer
	}{{"claude-code", gateway.Messages, "", "WebSearch"}, {"codex", gateway.Responses, "/v1", "web_search"}, {"gemini-cli", gateway.Gemini, "", "google_web_search"},
		{"opencode", gateway.Messages, "", "websearch"}, {"opencode", gateway.Responses, "/v1", "webfetch"}, {"opencode", gateway.Chat, "/v1", "websearch"}} {
		t.Run(c.agent+"/"+c.protocol.String(), func(t *testing.T) {
			a, err := agents.Parse(c.agent)
			if err != nil {
				t.Fatal(err)
			}
			program, pkg := a.Program()
			if _, err := exec.LookPath(program); err != nil {
				if os.Getenv("CI") != "" {
					t.Fatalf("%s is not installed under CI (npm install -g %s)", program, pkg)
				}
				t.Skipf("%s is not installed (npm install -g %s)", program, pkg)
			}
			fake := &fakecli.Server{Script: fakecli.Script{Command: `cat alerts.json && echo '["shop/StatefulSet/db"]' > agent_output.json`, Final: "The answer is written.", Web: c.web}}
			srv := httptest.NewServer(fake)
			defer srv.Close()
			for _, b := range backends(t) {
				if err := agentrun.Supports(b, a); err != nil {
					if _, _, verr := agentrun.Version(context.Background(), b, a); !errors.Is(verr, agentrun.ErrUnsupported) {
						t.Errorf("%s: Version should refuse as Supports does: %v", b.Name(), verr)
					}
					continue
				}
				t.Run(b.Name(), func(t *testing.T) {
					out, rec := play(t, b, a, c.protocol, srv.URL+c.base, nil)
					if out.Status != grader.StatusOK || !slices.Equal(out.Entities, []string{"shop/StatefulSet/db"}) {
						t.Fatalf("outcome %+v (%v); the agent printed %+v", out, out.Err, rec.ended)
					}
					if out.Turns < 2 {
						t.Errorf("%d model calls, want the command's and the answer's at least", out.Turns)
					}
					checkCLITurns(t, rec.turns)
					checkToolCalls(t, out, rec)
					checkNoWebTools(t, fake.Calls())
					if !slices.ContainsFunc(rec.turns, func(tr turn) bool {
						return slices.ContainsFunc(tr.reply.Message.ToolCalls, func(tc model.ToolCall) bool { return tc.Name == c.web })
					}) {
						t.Errorf("no turn shows the model's call of %s", c.web)
					}
					for _, call := range fake.Calls() {
						if strings.Contains(string(call.Body), canary) || slices.ContainsFunc(headerValues(call.Header), func(v string) bool { return strings.Contains(v, "aag-") }) {
							t.Errorf("a call to the provider holds the key in its body or the token in its headers: %s", call.Path)
						}
					}
				})
			}
		})
	}
}

// checkCLITurns: a real CLI's calls, side calls included, read as turns: the shell call of
// the script with its id, its result sent back once as new, and the final text.
func checkCLITurns(t *testing.T, turns []turn) {
	t.Helper()
	var id, final string
	var news runfolder.NewMessages
	results := 0
	for _, tr := range turns {
		if tr.err != nil {
			t.Errorf("a turn failed: %v", tr.err)
		}
		for _, m := range news.Next(tr.req, tr.err != nil) {
			if m.Role == model.RoleTool && m.ToolCallID == id && id != "" {
				results++
			}
		}
		for _, c := range tr.reply.Message.ToolCalls {
			if strings.Contains(c.Arguments, "cat alerts.json") && c.ID != "" {
				id = c.ID
				if cmd := agents.Command(tr.reply.Message); !strings.HasPrefix(cmd, "cat alerts.json") {
					t.Errorf("the live line would show %q for the shell call %s", cmd, c.Arguments)
				}
			}
		}
		if tr.reply.Message.Content == "The answer is written." {
			final = tr.reply.Message.Content
		}
	}
	if id == "" {
		t.Errorf("the turns show no shell call of cat alerts.json: %+v", turns)
	}
	if results != 1 {
		t.Errorf("the turns show the shell call's result new %d times, want once", results)
	}
	if final == "" {
		t.Errorf("the turns show no final text: %+v", turns)
	}
}

// headerValues are every value of h.
func headerValues(h http.Header) []string {
	var out []string
	for _, vs := range h {
		out = append(out, vs...)
	}
	return out
}

// webToolNames are the web tools of the real CLIs, by the names they offer them under.
var webToolNames = []string{"WebSearch", "WebFetch", "web_search", "google_web_search", "web_fetch", "websearch", "webfetch"}

// checkNoWebTools: no call the provider got offers a web tool of the CLI's nor holds a tool the provider runs itself: every tool is a function the CLI runs
// (Messages: an input_schema and no type; Responses: a function, custom or namespace; Chat: a
// function; Gemini: functionDeclarations alone).
func checkNoWebTools(t *testing.T, calls []fakecli.Call) {
	t.Helper()
	for _, call := range calls {
		body := gjson.ParseBytes(call.Body)
		for i, tool := range body.Get("tools").Array() {
			typ := tool.Get("type").String()
			switch {
			case strings.HasPrefix(call.Path, "/v1beta/"):
				tool.ForEach(func(k, v gjson.Result) bool {
					if k.Str != "functionDeclarations" {
						t.Errorf("%s: tools[%d] holds %s", call.Path, i, k.Str)
					}
					for _, d := range v.Array() {
						if slices.Contains(webToolNames, d.Get("name").String()) {
							t.Errorf("%s: the CLI offers its web tool %s", call.Path, d.Get("name"))
						}
					}
					return true
				})
				continue
			case call.Path == "/v1/messages" && typ != "":
				t.Errorf("%s: tools[%d] is of type %s", call.Path, i, typ)
			case call.Path == "/v1/responses" && typ != "function" && typ != "custom" && typ != "namespace":
				t.Errorf("%s: tools[%d] is of type %s", call.Path, i, typ)
			case call.Path == "/v1/chat/completions" && typ != "function":
				t.Errorf("%s: tools[%d] is of type %s", call.Path, i, typ)
			}
			name := tool.Get("name").String() + tool.Get("function.name").String()
			if slices.Contains(webToolNames, name) {
				t.Errorf("%s: the CLI offers its web tool %s", call.Path, name)
			}
		}
		for _, key := range []string{"mcp_servers", "plugins", "web_search_options"} {
			if body.Get(key).Exists() {
				t.Errorf("%s: the provider got %s", call.Path, key)
			}
		}
	}
}
