package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
	"github.com/tidwall/gjson"
)

// fakeJudge is an OpenAI Chat Completions server on 127.0.0.1 answering judge questions:
// answer maps the question's ground-truth groups and submitted entities to the reply's
// mapping. With status set, it refuses every request with that HTTP status instead.
type fakeJudge struct {
	answer   func(groups []gjson.Result, entities []string) map[string]any
	status   int
	requests atomic.Int32
	seen     func(request gjson.Result) // when set, hears every request (the server handles one at a time)
	mu       sync.Mutex
}

func (f *fakeJudge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.requests.Add(1)
	body, _ := io.ReadAll(r.Body)
	if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test" {
		http.Error(w, `{"error":{"message":"wrong path or key"}}`, http.StatusNotFound)
		return
	}
	if f.status != 0 {
		w.WriteHeader(f.status)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided"}}`)
		return
	}
	req := gjson.ParseBytes(body)
	if f.seen != nil {
		f.mu.Lock()
		f.seen(req)
		f.mu.Unlock()
	}
	if req.Get("tools").Exists() || req.Get("messages.0.role").String() != "system" || !strings.Contains(req.Get("messages.0.content").String(), "Never guess") {
		http.Error(w, `{"error":{"message":"not a judge question"}}`, http.StatusBadRequest)
		return
	}
	var groups []gjson.Result
	var entities []string
	for _, line := range strings.Split(req.Get("messages.1.content").String(), "\n") {
		switch {
		case strings.HasPrefix(line, `{"id"`):
			groups = append(groups, gjson.Parse(line))
		case strings.HasPrefix(line, `"`):
			var e string
			json.Unmarshal([]byte(line), &e)
			entities = append(entities, e)
		}
	}
	mapping, _ := json.Marshal(f.answer(groups, entities))
	reply, _ := json.Marshal(map[string]any{"id": "chatcmpl-1", "object": "chat.completion",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": string(mapping)}}},
		"usage":   map[string]any{"prompt_tokens": 900, "completion_tokens": 40}})
	w.Header().Set("Content-Type", "application/json")
	w.Write(reply)
}

// sampleJudgement is a judge's answer for the sample submissions: it agrees with the rules
// except where it is unsure of the chaos Schedule (which costs Scenario-904 repeat 1 its
// score) and of the frontend Service, and names an unknown group for the email Service.
var sampleJudgement = map[string]any{
	"otel-demo/ConfigMap/flagd-config":                           "flagd-config-1",
	"otel-demo/Deployment/cart":                                  "cart-pod-1",
	"otel-demo/NetworkPolicy/payment-deny-ingress":               "payment-netpol-1",
	"otel-demo/networkpolicies/payment-deny-ingress":             "payment-netpol-1",
	"otel-demo/Service/payment":                                  "payment-service-1",
	"otel-demo/Pod/product-catalog-7d9f8c6b45-x2kq4":             "product-catalog-pod-1",
	"otel-demo/Deployment/product-catalog":                       "product-catalog-deployment-1",
	"otel-demo/Service/frontend":                                 nil,
	"chaos-mesh/Schedule/otel-demo-email-checkout-partition":     nil,
	"cluster/Namespace/otel-demo":                                "otel-demo-namespace-1",
	"chaos-mesh/NetworkChaos/otel-demo-email-checkout-partition": "email-partition-1",
	"chaos-mesh/networkchaos/otel-demo-email-checkout-partition": "email-partition-1",
	"Namespace/otel-demo":                                        "otel-demo-namespace-1",
	"otel-demo/Service/email":                                    "email-svc",
}

func byTable(table map[string]any) func([]gjson.Result, []string) map[string]any {
	return func(_ []gjson.Result, entities []string) map[string]any {
		out := map[string]any{}
		for _, e := range entities {
			out[e] = table[e]
		}
		return out
	}
}

// judgeEnv serves f and returns the environment pointing aa-grade at it, with a fresh cache
// folder.
func judgeEnv(t *testing.T, f *fakeJudge) (env []string, cache string) {
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	cache = t.TempDir()
	return []string{"OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=test", "XDG_CACHE_HOME=" + cache}, cache
}

var gradeSampleArgs = []string{"grade", "--dataset", "testdata/grade/dataset", "testdata/grade/submissions"}

// TestGradeWithJudge grades the sample with a judge: its mapping decides, the rules' grade and
// the agreement are reported; grading again asks nothing (the cache answers).
func TestGradeWithJudge(t *testing.T) {
	f := &fakeJudge{answer: byTable(sampleJudgement)}
	env, _ := judgeEnv(t, f)
	args := append(append([]string(nil), gradeSampleArgs...), "--judge", "openai/judge-model", "--json")
	r := aaGrade(t, env, args...)
	r.wantExit(t, 0)
	if want := "judge: 10 calls (cached answers are free), 9,000 input and 400 output tokens, cost unknown\n"; r.stderr != want {
		t.Fatalf("stderr\n%s\nwant\n%s", r.stderr, want)
	}
	if n := f.requests.Load(); n != 10 {
		t.Fatalf("%d judge requests, want one per graded episode (10)", n)
	}
	out := gjson.Parse(r.stdout)
	// Scenario-904 repeat 1 loses its score (the judge did not match the Schedule): 5.1667 / 12.
	if s := out.Get("score").Float(); s < 0.4305 || s > 0.4306 {
		t.Fatalf("score = %v\n%s", s, r.stdout)
	}
	checks := map[string]string{
		"judge.model": "openai/judge-model", "judge.episodes_judged": "10", "judge.fallbacks": "0",
		"judge.score_agreement": "0.9", "judge.entity_agreement": "0.8125",
		"per_task.3.episodes.0.matcher": "judge", "per_task.3.episodes.0.score": "0", "per_task.3.episodes.0.rules.score": "1",
		"per_task.3.episodes.0.rules.disagreed.0":   "chaos-mesh/Schedule/otel-demo-email-checkout-partition",
		"per_task.3.episodes.2.judge_note":          `unknown group "email-svc" for otel-demo/Service/email (unmatched)`,
		"per_task.2.episodes.0.predictions.0.group": "product-catalog-pod-1",
		"per_task.2.episodes.2.status":              "invalid",
		"per_task.2.episodes.2.matcher":             "",
		"per_task.1.episodes.2.status":              "missing",
	}
	for path, want := range checks {
		if got := out.Get(path).String(); got != want {
			t.Errorf("%s = %q, want %q", path, got, want)
		}
	}
	if g := out.Get("per_task.3.episodes.2.predictions.2"); g.Get("entity").String() != "otel-demo/Service/email" || g.Get("group").Type != gjson.Null {
		t.Errorf("the unknown group must leave its entity unmatched: %s", g.Raw)
	}
	if rules := out.Get("judge.rules_score").Float(); rules < 0.5138 || rules > 0.5139 {
		t.Errorf("rules_score = %v, want the rules' 0.514", rules)
	}

	again := aaGrade(t, env, args...)
	again.wantExit(t, 0)
	if again.stdout != r.stdout {
		t.Errorf("second grading printed\n%s\nthe first\n%s", again.stdout, r.stdout)
	}
	if n := f.requests.Load(); n != 10 {
		t.Errorf("second grading: %d requests in all, want the first's 10", n)
	}
	if !strings.HasPrefix(again.stderr, "judge: 0 calls") {
		t.Errorf("second grading: stderr %q, want it to start with judge: 0 calls", again.stderr)
	}
	if t.Failed() {
		t.FailNow()
	}
	text := aaGrade(t, append(env, "AA_GRADE_JUDGE=openai/judge-model"), gradeSampleArgs...)
	text.wantExit(t, 0)
	if n := f.requests.Load(); n != 10 {
		t.Fatalf("text: %d requests in all, want 10", n)
	}
	golden.Check(t, "testdata/grade-judge.txt", text.stdout)
}

// TestGradeJudgePresetAndEffort: --judge takes a preset, --judge-effort goes to the provider
// and into the judge's name (so the cache asks again at another effort), and a preset's
// prices give the judge's cost.
func TestGradeJudgePresetAndEffort(t *testing.T) {
	var efforts []string
	f := &fakeJudge{answer: byTable(sampleJudgement), seen: func(body gjson.Result) { efforts = append(efforts, body.Get("reasoning_effort").String()) }}
	env, _ := judgeEnv(t, f)
	seen := func() []string { // the server's handler goroutines append
		f.mu.Lock()
		defer f.mu.Unlock()
		return append([]string(nil), efforts...)
	}
	args := append(append([]string(nil), gradeSampleArgs...), "--judge", "gpt-5.5-xhigh", "--judge-effort", "medium", "--json")
	r := aaGrade(t, env, args...)
	r.wantExit(t, 0)
	if got := gjson.Get(r.stdout, "judge.model").String(); got != "openai/gpt-5.5 effort=medium" {
		t.Errorf("judge.model %q, want openai/gpt-5.5 effort=medium", got)
	}
	if e := seen(); len(e) != 10 || e[0] != "medium" {
		t.Errorf("efforts %v, want 10, medium", e)
	}
	if t.Failed() {
		t.FailNow()
	}
	// 10 calls x (900 input x $5 + 40 output x $30) per million tokens.
	if !strings.Contains(r.stderr, "judge: 10 calls (cached answers are free), 9,000 input and 400 output tokens, cost $0.057") {
		t.Fatalf("stderr: %s", r.stderr)
	}
	r = aaGrade(t, env, append(args[:len(args)-2], "high", "--json")...)
	r.wantExit(t, 0)
	if e := seen(); len(e) != 20 || e[19] != "high" {
		t.Fatalf("another effort was answered from the cache: efforts %v, want 10 more, high", e)
	}
}

// TestGradeJudgeRefused: a judge whose every call is refused (a bad key) leaves the rules to
// grade, with a note on each episode and one warning; the result is the rules', printed, and
// the exit code 3, as the grading asked for did not happen.
func TestGradeJudgeRefused(t *testing.T) {
	f := &fakeJudge{status: http.StatusUnauthorized}
	env, cache := judgeEnv(t, f)
	r := aaGrade(t, env, append(append([]string(nil), gradeSampleArgs...), "--judge", "openai/judge-model", "--json")...)
	if r.code != 3 || f.requests.Load() != 10 {
		t.Fatalf("exit %d after %d requests\n%s", r.code, f.requests.Load(), r.stderr)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	if len(lines) != 3 {
		t.Fatalf("stderr of %d lines, want 3:\n%s", len(lines), r.stderr)
	}
	if want := "warning: the judge failed on 10 episodes, which the rules graded; first, Scenario-901 repeat 1: judge failed"; !strings.HasPrefix(lines[0], want) {
		t.Errorf("the first line %q, want it to start %q", lines[0], want)
	}
	textcheck.Has(t, "the first line", lines[0], "HTTP 401: Incorrect API key provided")
	if want := "judge: 10 calls"; !strings.HasPrefix(lines[1], want) {
		t.Errorf("the second line %q, want it to start %q", lines[1], want)
	}
	if want := "aa-grade: the judge failed on all 10 episodes (see the warning above): the scores are the rules' alone"; lines[2] != want {
		t.Errorf("the last line %q, want %q", lines[2], want)
	}
	if t.Failed() {
		t.FailNow()
	}
	out := gjson.Parse(r.stdout)
	if s := out.Get("score").Float(); s < 0.5138 || s > 0.5139 {
		t.Errorf("score %v, want the rules' 0.514", s)
	}
	if n := out.Get("judge.fallbacks").Int(); n != 10 {
		t.Errorf("judge.fallbacks %d, want 10", n)
	}
	if n := out.Get("judge.episodes_judged").Int(); n != 0 {
		t.Errorf("judge.episodes_judged %d, want 0", n)
	}
	if a := out.Get("judge.score_agreement"); a.Type != gjson.Null {
		t.Errorf("judge.score_agreement %s, want null", a.Raw)
	}
	if t.Failed() {
		t.Fatalf("summary:\n%s", r.stdout)
	}
	ep := out.Get("per_task.0.episodes.0")
	if m := ep.Get("matcher").String(); m != "rules" {
		t.Errorf("episode matched by %q, want rules", m)
	}
	textcheck.Has(t, "the episode's judge_note", ep.Get("judge_note").String(), "401")
	if ep.Get("rules").Exists() {
		t.Errorf("the episode has a rules field beside matcher rules")
	}
	if t.Failed() {
		t.Fatalf("episode = %s", ep.Raw)
	}
	if strings.Contains(r.stdout+r.stderr, "Bearer") {
		t.Fatal("the key's header leaked")
	}
	// Nothing was cached: with a judge that answers, the same grading asks again.
	if entries, _ := os.ReadDir(filepath.Join(cache, "aa-grade", "judge")); len(entries) != 0 {
		t.Fatalf("failed calls were cached: %v", entries)
	}
}

func TestJudgeUsageErrors(t *testing.T) {
	for name, c := range map[string]struct {
		env  []string
		args []string
	}{
		"builtin judge": {nil, []string{"--judge", "builtin/baseline"}},
		"no key":        {[]string{"OPENAI_API_KEY="}, []string{"--judge", "openai/judge-model"}},
		"unknown":       {nil, []string{"--judge", "acme/judge"}},
		"zero parallel": {nil, []string{"--parallel", "0"}},
	} {
		t.Run(name, func(t *testing.T) {
			aaGrade(t, c.env, append(append([]string(nil), gradeSampleArgs...), c.args...)...).wantErrorLine(t, 2)
		})
	}
}

// TestRunWithJudge: a run's episodes are graded by the judge as they end; results.jsonl and
// summary.json say so, and resuming with another judge is refused.
func TestRunWithJudge(t *testing.T) {
	firstRootCause := func(groups []gjson.Result, entities []string) map[string]any {
		out := map[string]any{}
		for _, e := range entities {
			out[e] = nil
			for _, g := range groups {
				if g.Get("root_cause").Bool() {
					out[e] = g.Get("id").String()
					break
				}
			}
		}
		return out
	}
	f := &fakeJudge{answer: firstRootCause}
	env, _ := judgeEnv(t, f)
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "903", "--repeats", "2", "--out", out, "--judge", "openai/judge-model"}
	r := aaGrade(t, env, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "Judge openai/judge-model decided 2 episodes; the rules agree on 100.0% of its scores") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// Both episodes submit the same diagnosis: the second is answered from the cache.
	if f.requests.Load() != 1 {
		t.Fatalf("%d judge requests", f.requests.Load())
	}
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	for _, line := range strings.Split(strings.TrimSpace(string(results)), "\n") {
		res := gjson.Parse(line)
		if m := res.Get("matcher").String(); m != "judge" {
			t.Errorf("matched by %q, want judge", m)
		}
		if s := res.Get("score").Float(); s != 1 {
			t.Errorf("score %v, want 1", s)
		}
		if s := res.Get("rules.score").Float(); s != 1 {
			t.Errorf("rules.score %v, want 1", s)
		}
		if t.Failed() {
			t.Fatalf("result = %s", line)
		}
	}
	wantKinds(t, out, model.KindRequest, model.KindResponse, model.KindTurn) // the judge's calls, and the baseline's turns
	summary, _ := os.ReadFile(filepath.Join(out, "summary.json"))
	header, _ := os.ReadFile(filepath.Join(out, "run.json"))
	s := gjson.ParseBytes(summary)
	if n := s.Get("judge.episodes_judged").Int(); n != 2 {
		t.Errorf("summary.json: %d episodes judged, want 2", n)
	}
	if m := s.Get("judge.model").String(); m != "openai/judge-model" {
		t.Errorf("summary.json: judge model %q, want openai/judge-model", m)
	}
	if m := gjson.GetBytes(header, "judge").String(); m != "openai/judge-model" {
		t.Errorf("run.json: judge %q, want openai/judge-model", m)
	}
	if t.Failed() {
		t.Fatalf("summary.json = %s\nrun.json = %s", summary, header)
	}
	args[len(args)-1] = "openai/another-judge"
	if r := aaGrade(t, env, args...); r.code != 2 || !strings.Contains(r.stderr, "judge was openai/judge-model, now openai/another-judge") {
		t.Fatalf("another judge: exit %d\n%s", r.code, r.stderr)
	}
}

// TestJudgePromptFromFile: --judge-prompt's text is what the judge gets, placeholders filled
// and parted at its --- user --- line, and its sha256 names the judge; a prompt with a
// placeholder aa-grade does not know, or without the entities, is refused before any call.
func TestJudgePromptFromFile(t *testing.T) {
	var users []string
	f := &fakeJudge{answer: byTable(sampleJudgement), seen: func(req gjson.Result) { users = append(users, req.Get("messages.1.content").String()) }}
	env, _ := judgeEnv(t, f)
	dir := t.TempDir()
	prompt := "You grade as the official judge does. Never guess.\n--- user ---\nTHE GROUPS\n{{groups}}\nTHE {{entities_count}} ENTITIES\n{{entities}}\nOne JSON object, please.\n"
	file := filepath.Join(dir, "judge.txt")
	if err := os.WriteFile(file, []byte(prompt), 0o644); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256([]byte(prompt))
	r := aaGrade(t, env, append(append([]string(nil), gradeSampleArgs...), "--judge", "openai/judge-model", "--judge-prompt", file, "--json")...)
	if r.code != 0 || f.requests.Load() != 10 {
		t.Fatalf("exit %d, %d requests\n%s", r.code, f.requests.Load(), r.stderr)
	}
	if got, want := gjson.Get(r.stdout, "judge.model").String(), "openai/judge-model prompt=sha256:"+hex.EncodeToString(sum[:]); got != want {
		t.Errorf("judge = %q, want %q", got, want)
	}
	u := users[0]
	if !strings.HasPrefix(u, "THE GROUPS\n{\"id\"") {
		t.Errorf("the user message does not start as the prompt filled in:\n%s", u)
	}
	textcheck.Has(t, "the user message", u, "ENTITIES\n\"")
	textcheck.Lacks(t, "the user message", u, "{{", "Ground-truth groups")
	for name, text := range map[string]string{
		"unknown placeholder": "Never guess.\n{{groups}}\n{{submission}}\n",
		"no entities":         "Never guess.\n{{ground_truth}}\n",
	} {
		bad := filepath.Join(dir, strings.ReplaceAll(name, " ", "-"))
		if err := os.WriteFile(bad, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		r := aaGrade(t, env, append(append([]string(nil), gradeSampleArgs...), "--judge", "openai/judge-model", "--judge-prompt", bad)...)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", name, r.code)
		}
		textcheck.Has(t, name+": stderr", r.stderr, "--judge-prompt "+bad+": ")
		if n := f.requests.Load(); n != 10 {
			t.Errorf("%s: %d requests in all, want still 10", name, n)
		}
	}
	if r := aaGrade(t, env, append(append([]string(nil), gradeSampleArgs...), "--judge-prompt", file)...); r.code != 2 || !strings.Contains(r.stderr, "--judge-prompt needs --judge") {
		t.Errorf("a prompt without a judge: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunKeepsTheJudgesVerdicts: a run graded by a judge keeps its answers in the run folder,
// so grade scores the run again, on another machine's cache, without a call; another judge
// prompt asks again.
func TestRunKeepsTheJudgesVerdicts(t *testing.T) {
	f := &fakeJudge{answer: func(groups []gjson.Result, entities []string) map[string]any {
		out := map[string]any{}
		for _, e := range entities {
			out[e] = nil
		}
		return out
	}}
	env, _ := judgeEnv(t, f)
	out := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, env, "run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "902", "--repeats", "1", "--out", out, "--judge", "openai/judge-model"); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	kept, _ := filepath.Glob(filepath.Join(out, runfolder.JudgeDir, "*.json"))
	if len(kept) != 1 || f.requests.Load() != 1 {
		t.Fatalf("%d verdicts kept, %d requests", len(kept), f.requests.Load())
	}
	freshCache := append(env, "XDG_CACHE_HOME="+t.TempDir())
	r := aaGrade(t, freshCache, "grade", "--judge", "openai/judge-model", "--json", out)
	r.wantExit(t, 0)
	if n := f.requests.Load(); n != 1 {
		t.Errorf("grade of the run: %d requests in all, want still 1", n)
	}
	if n := gjson.Get(r.stdout, "judge.episodes_judged").Int(); n != 1 {
		t.Errorf("grade of the run: judge.episodes_judged %d, want 1", n)
	}
	if t.Failed() {
		t.Fatalf("grade of the run:\n%s%s", r.stdout, r.stderr)
	}

	prompt := filepath.Join(t.TempDir(), "judge.txt")
	if err := os.WriteFile(prompt, []byte("Never guess.\n--- user ---\n{{groups}}\n{{entities}}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := aaGrade(t, freshCache, "grade", "--judge", "openai/judge-model", "--judge-prompt", prompt, out); r.code != 0 || f.requests.Load() != 2 {
		t.Fatalf("grade with another prompt: exit %d, %d requests\n%s", r.code, f.requests.Load(), r.stderr)
	}
}
