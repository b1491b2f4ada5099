//go:build linux

package main

import (
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// hostileAgent is the third red team's agent (issue 35), standard-library Python: argv[1] is
// the protocol (chat, responses, messages, gemini), argv[2] what it does. "budget": a body
// with the model twice (the second another), one with stream twice, one with an escaped key
// (Gemini, whose model is in the path: its contents twice, its generationConfig twice, once
// escaped), then 11 calls padded to 1 MB with an output cap of 1,000,000 tokens, streamed with usage
// turned off where the protocol has the option, the first hung up by the upstream. "once": one
// call, then a wait of 2 minutes that the run's stop cuts short. "flood":
// 120 requests of 1 MiB of control bytes with a bad token, 4 at once, then calls of 32 MiB.
const hostileAgent = `
import json, os, sys, threading, urllib.request
proto, mode = sys.argv[1], sys.argv[2]
gw, token, model = os.environ["AA_GRADE_GATEWAY"], os.environ["AA_GRADE_TOKEN"], os.environ["AA_GRADE_MODEL"]

def body(text, stream):
    if proto == "chat":
        b = {"model": model, "messages": [{"role": "user", "content": text}], "max_tokens": 1000000, "stream": stream}
        if stream:
            b["stream_options"] = {"include_usage": False}
    elif proto == "responses":
        b = {"model": model, "input": text, "max_output_tokens": 1000000, "stream": stream}
    elif proto == "messages":
        b = {"model": model, "max_tokens": 1000000, "messages": [{"role": "user", "content": text}], "stream": stream}
    else:
        b = {"contents": [{"role": "user", "parts": [{"text": text}]}], "generationConfig": {"maxOutputTokens": 1000000}}
    return json.dumps(b)

def post(data, stream=False, tok=None):
    tok = tok or token
    path = {"chat": "/v1/chat/completions", "responses": "/v1/responses", "messages": "/v1/messages"}.get(proto)
    if path is None:
        path = "/v1beta/models/" + model + (":streamGenerateContent?alt=sse" if stream else ":generateContent")
    headers = {"Content-Type": "application/json", "Authorization": "Bearer " + tok, "x-api-key": tok,
               "x-goog-api-key": tok, "anthropic-version": "2023-06-01"}
    req = urllib.request.Request(gw + path, data=data if isinstance(data, bytes) else data.encode(), headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            resp.read()
            return resp.status
    except urllib.error.HTTPError as e:
        return e.code
    except Exception as e:
        return str(e)

if mode == "budget":
    plain = body("hi", False)
    attacks = [plain[:-1] + ', "model": "gpt-NOT-ALLOWED"}', plain[:-1] + ', "stream": true}',
               plain[:-1] + ', "mod\\u0065l": "gpt-NOT-ALLOWED"}']
    if proto == "gemini":
        attacks = [plain[:-1] + ', "contents": []}', plain[:-1] + ', "generationConfig": {"maxOutputTokens": 1}}',
                   plain[:-1] + ', "generationConfi\\u0067": {}}']
    for attack in attacks:
        print("attack", post(attack), flush=True)
    pad = "x" * 1000000
    for i in range(11):
        print("call", i, post(body(("HANGUP" if i == 0 else "") + pad, True), stream=True), flush=True)
elif mode == "once":
    print("call", post(body("hi", False)), flush=True)
    threading.Event().wait(120)
else:
    junk = bytes([1]) * (1 << 20)
    def flood():
        for _ in range(30):
            post(junk, tok="not-the-token")
    threads = [threading.Thread(target=flood) for _ in range(4)]
    [t.start() for t in threads]
    [t.join() for t in threads]
    big = body("y" * (32 << 20), False)
    for _ in range(8):
        print("big", post(big), flush=True)
`

// hostileRunArgs is a run of the demo's task 901 by the hostile agent, doing mode over
// protocol of the model spec, written to out in sandbox sb.
func hostileRunArgs(t *testing.T, spec, protocol, mode, out string, sb []string) []string {
	dir := sharedDir(t)
	if err := os.WriteFile(filepath.Join(dir, "hostile.py"), []byte(hostileAgent), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"run", "--dataset", "demo", "--model", spec, "--tasks", "901", "--repeats", "1", "--out", out,
		"--agent-dir", dir, "--agent", `command:python3 "$AA_GRADE_AGENT_DIR/hostile.py" ` + protocol + " " + mode,
		"--price-input", "1", "--price-output", "1"}
	return append(args, sb...)
}

// upstreamEnv points every provider at u, with a key.
func upstreamEnv(u *billingUpstream) []string {
	return []string{"OPENAI_BASE_URL=" + u.url + "/v1", "OPENAI_API_KEY=sk-test-1",
		"ANTHROPIC_BASE_URL=" + u.url, "ANTHROPIC_API_KEY=sk-test-2", "GOOGLE_GEMINI_BASE_URL=" + u.url, "GEMINI_API_KEY=sk-test-3"}
}

// TestHostileAgentBudget: through the real command, on every backend (every protocol on bwrap),
// as root and as a normal user (agentRunners), an
// agent that sends a body with the model twice, the stream twice or an escaped key gets each
// refused (the upstream serves only the run's model), and one whose streams carry no usage or
// are hung up cannot spend past --max-cost 3 at $2 a call: the run stops at the cap, and the
// spend in results.jsonl is what the upstream billed, within the worst case of the call hung
// up, which the trajectory says.
func TestHostileAgentBudget(t *testing.T) {
	protocols := []struct{ spec, protocol string }{
		{"openai/fake", "chat"}, {"openai-responses/fake", "responses"}, {"anthropic/fake", "messages"}, {"google/fake", "gemini"},
	}
	for _, runner := range agentRunners(t) {
		for i, sb := range runner.backends {
			// Every protocol on the first backend; Chat on the others, whose relay is what
			// differs (the gateway is the same on each), so that the package stays within go
			// test's time.
			cases := protocols
			if i > 0 {
				cases = protocols[:1]
			}
			for _, c := range cases {
				t.Run(runner.name+"/"+sb[1]+"/"+c.protocol, func(t *testing.T) {
					t.Parallel()
					checkHostileBudget(t, runner, sb, c.spec, c.protocol)
				})
			}
		}
	}
}

// checkHostileBudget runs the hostile agent's budget attack as runner's user in sandbox sb,
// over the protocol of the model spec, and checks what TestHostileAgentBudget says.
func checkHostileBudget(t *testing.T, runner agentRunner, sb []string, spec, protocol string) {
	u := newBillingUpstream(t)
	home := runner.ownDir(t)
	out := filepath.Join(home, "run")
	r := runner.run(t, home, upstreamEnv(u), append(hostileRunArgs(t, spec, protocol, "budget", out, sb), "--max-cost", "3")...)
	models, billed := u.served()
	for _, m := range models {
		if m != "fake" {
			t.Errorf("the upstream served the model %q, want only the run's", m)
		}
	}
	if len(models) > 3 {
		t.Errorf("the upstream served %d calls at $2 each past a budget of $3, want at most 3\n%s", len(models), r.stderr)
	}
	if len(models) < 2 {
		t.Fatalf("the upstream served %d calls, want the budget spent\nexit %d\n%s%s", len(models), r.code, r.stdout, r.stderr)
	}
	res := gjson.Parse(strings.TrimSpace(readFile(t, filepath.Join(out, "results.jsonl"))))
	if got := res.Get("status").String(); got != "cost_limit" {
		t.Errorf("status %q, want cost_limit: %s", got, res.Raw)
	}
	// The hung-up call counts its worst case: 1,000,000 tokens out and its body's
	// bytes in, a little over the 1,000,000 billed.
	if spent := res.Get("cost_usd").Float(); spent < billed || spent > billed+0.01 {
		t.Errorf("results.jsonl says $%g spent, the upstream billed $%g", spent, billed)
	}
	if !res.Get("tokens.worst_case").Bool() {
		t.Errorf("the result's tokens do not say a call counted at its worst case: %s", res.Get("tokens").Raw)
	}
	text := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1"))
	if !strings.Contains(text, "counted at its worst case") {
		t.Error("the trajectory does not say how the hung-up call was counted")
	}
	if n := strings.Count(text, "refused by the gateway: the request's body must be one JSON object that every JSON parser reads alike"); n != 3 {
		t.Errorf("the trajectory records %d bodies refused as read apart, want the 3 attacks", n)
	}
}

// TestHostileAgentFlood: through the real command, on every backend, as root and as a normal
// user (agentRunners), an agent that floods the
// gateway with requests refused (1 MiB of control bytes each, a bad token, 4 at once) is
// stopped at the 100th, its episode refused_limit; its trajectory stays small, whatever it
// sent, and the upstream hears nothing.
func TestHostileAgentFlood(t *testing.T) {
	for _, runner := range agentRunners(t) {
		for _, sb := range runner.backends {
			t.Run(runner.name+"/"+sb[1], func(t *testing.T) {
				t.Parallel()
				checkHostileFlood(t, runner, sb)
			})
		}
	}
}

// checkHostileFlood runs the hostile agent's flood as runner's user in sandbox sb, and checks
// what TestHostileAgentFlood says.
func checkHostileFlood(t *testing.T, runner agentRunner, sb []string) {
	u := newBillingUpstream(t)
	home := runner.ownDir(t)
	out := filepath.Join(home, "run")
	r := runner.run(t, home, upstreamEnv(u), hostileRunArgs(t, "openai/fake", "chat", "flood", out, sb)...)
	res := gjson.Parse(strings.TrimSpace(readFile(t, filepath.Join(out, "results.jsonl"))))
	if got := res.Get("status").String(); got != "refused_limit" {
		t.Errorf("status %q, want refused_limit\n%s\n%s", got, res.Raw, r.stderr)
	}
	if models, _ := u.served(); len(models) != 0 {
		t.Errorf("the upstream served %d calls", len(models))
	}
	text := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1"))
	if len(text) > 1<<20 {
		t.Errorf("the trajectory holds %d bytes, want well under 1 MiB for 100 refusals", len(text))
	}
	if n := strings.Count(text, `"refused by the gateway`); n != 100 {
		t.Errorf("the trajectory records %d refusals, want the first 100", n)
	}
	if !slices.Contains([]int{0, 1}, r.code) {
		t.Errorf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestAgentRunStopsOnAWebPage: an agent's run whose base URL is an ordinary web server, which
// lists the models and answers a model call with a 200 HTML page, stops at the agent's first
// call (issue 36): exit 3, the last line naming the base URL, the variable that set it and
// the reason, one call made; the agent waiting for more is stopped with it.
func TestAgentRunStopsOnAWebPage(t *testing.T) {
	url, calls := alwaysAnswering(t, true, http.StatusOK, "text/html", "<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>")
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789"},
		hostileRunArgs(t, "openai/gpt-test", "chat", "once", out, []string{"--sandbox", "landlock"})...)
	r.wantExit(t, 3)
	if n := calls.Load(); n != 1 {
		t.Errorf("%d model calls, want 1", n)
	}
	textcheck.Has(t, "the last line", lastLine(r.stderr), url+"/v1", "OPENAI_BASE_URL", "the answer is not the API's JSON", "the run stopped")
}
