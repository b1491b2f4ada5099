package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/closedport"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunBaselineOnDemo runs builtin/baseline over two demo tasks end to end, then runs the
// same command again: the second run finds every episode done and runs none.
func TestRunBaselineOnDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	args := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,906", "--repeats", "2", "--out", out}
	r := aaGrade(t, env, args...)
	// The baseline's score on these two tasks, as a run of it printed (it misses 901's root
	// cause and names two decoys beside 906's).
	r.wantExit(t, 0)
	if !textcheck.Has(t, "the output", r.stdout, "Score 0.167", "over 2 tasks x 2 repeats") {
		t.FailNow()
	}
	for _, f := range []string{"run.json", "results.jsonl", "summary.json", "episodes/Scenario-901/1/agent_output.json", "episodes/Scenario-906/2/trajectory.jsonl.zst"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var header map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if err := json.Unmarshal(b, &header); err != nil {
		t.Fatalf("run.json: %v\n%s", err, b)
	}
	if header["model"] != "builtin/baseline" {
		t.Errorf("run.json: model %v, want builtin/baseline", header["model"])
	}
	if sha, _ := header["prompt_sha256"].(string); len(sha) != 64 {
		t.Fatalf("run.json: prompt_sha256 %v, want 64 hex digits", header["prompt_sha256"])
	}
	kinds := checkTrajectories(t, out)
	if len(kinds) != 2 {
		t.Errorf("the baseline's trajectories have %v, want two kinds of lines: turns (it calls no API) and the results of its last turn", kinds)
	}
	if kinds[model.KindTurn] == 0 {
		t.Errorf("the baseline's trajectories have %v, want turns", kinds)
	}
	if kinds[model.KindUnsent] != 4 {
		t.Errorf("the baseline's trajectories have %d unsent results, want 4 (each episode's last turn): %v", kinds[model.KindUnsent], kinds)
	}
	before, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if n := strings.Count(string(before), "\n"); n != 4 {
		t.Fatalf("%d results", n)
	}
	again := aaGrade(t, env, args...)
	after, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	again.wantExit(t, 0)
	if string(after) != string(before) {
		t.Fatalf("the resume ran episodes again: results.jsonl was\n%s\nand is\n%s", before, after)
	}
	if !textcheck.Has(t, "the resume's output", again.stdout, "Full recall in 50.0%") {
		t.FailNow()
	}

	// Another configuration in the same folder is refused, naming what changed.
	changed := append(append([]string(nil), args...), "--max-turns", "30")
	// It is the only line: no "running ..." line or sandbox warning before it.
	r = aaGrade(t, env, changed...)
	r.wantErrorLineWith(t, 2, "aa-grade: ", "max_turns was 100, now 30")
	if !strings.HasSuffix(r.stderr, "): use another --out, or the same flags\n") {
		t.Fatalf("changed configuration: stderr does not end with how to go on:\n%s", r.stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no model":                {"run", "--dataset", "demo"},
		"unknown model":           {"run", "--dataset", "demo", "--model", "acme/x"},
		"unknown built-in model":  {"run", "--dataset", "demo", "--model", "builtin/oracle"},
		"missing key":             {"run", "--dataset", "demo", "--model", "openai/gpt-5.5"},
		"missing key (responses)": {"run", "--dataset", "demo", "--model", "openai-responses/gpt-5.5"},
		"bad sandbox":             {"run", "--dataset", "demo", "--model", "builtin/baseline", "--sandbox", "chroot"},
		"zero repeats":            {"run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "0"},
		"replay of no run":        {"run", "--model", "replay/testdata/no-such-run"},
		"negative rpm":            {"run", "--dataset", "demo", "--model", "builtin/baseline", "--rpm", "-1"},
		"negative tpm":            {"run", "--dataset", "demo", "--model", "builtin/baseline", "--tpm", "-1"},
		"no calls":                {"run", "--dataset", "demo", "--model", "builtin/baseline", "--max-in-flight", "-2"},
		"bad memory limit":        {"run", "--dataset", "demo", "--model", "builtin/baseline", "--memory-limit", "lots"},
		"zero disk limit":         {"run", "--dataset", "demo", "--model", "builtin/baseline", "--disk-limit", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			if r := aaGrade(t, []string{"OPENAI_API_KEY="}, args...); r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestRunModelErrorsNameTheRunsOwnModels: a spec in no provider's form is told the models
// the run builds itself as well; a provider's spec that lacks its key is told only that.
func TestRunModelErrorsNameTheRunsOwnModels(t *testing.T) {
	for spec, want := range map[string]string{
		"acme/x":       `aa-grade: --model: bad model: "acme/x" names no provider: unknown provider "acme" (expected openai/MODEL, openai-responses/MODEL, anthropic/MODEL, google/MODEL, openrouter/ORG/MODEL, openai-api/PROVIDER/MODEL); or builtin/baseline, replay/RUN_DIR, or a preset (aa-grade models)` + "\n",
		"openai/gpt-5": "aa-grade: --model: bad model: openai/gpt-5 needs OPENAI_API_KEY in the environment\n",
	} {
		r := aaGrade(t, []string{"OPENAI_API_KEY="}, "run", "--dataset", "demo", "--model", spec)
		if r.code != 2 {
			t.Errorf("%s: exit %d, want 2", spec, r.code)
		}
		if r.stderr != want {
			t.Errorf("%s: stderr\n%s\nwant\n%s", spec, r.stderr, want)
		}
	}
}

// TestRunStopsEarlyOnPermanentErrors: a provider that refuses the key (its models list
// answering) fails the first episode at once, and the run stops (exit 3) instead of going
// through every task.
func TestRunStopsEarlyOnPermanentErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-bad-key-echoed"}}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "FAKE_API_KEY=sk-bad-key-echoed"},
		"run", "--dataset", "demo", "--model", "openai-api/fake/model-x", "--parallel", "1", "--out", out)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	r.wantExit(t, 3)
	textcheck.Has(t, "stderr", r.stderr, "the run stopped", "refused", "Incorrect API key")
	if n := strings.Count(string(results), "\n"); n != 1 {
		t.Errorf("%d results, want 1", n)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("%d calls, want 1", n)
	}
	if t.Failed() {
		t.FailNow()
	}
	// The provider quoted the key back: it is redacted everywhere, the trajectory included.
	assertNoSecret(t, out, "sk-bad-key-echoed")
	if traj := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1")); !strings.Contains(traj, "Incorrect API key provided: [REDACTED]") {
		t.Fatalf("the refusal is not in the trajectory:\n%s", traj)
	}
}

// TestRunStripsTerminalSequencesFromProviderErrors: a provider's refusal holding escape
// sequences reaches the finished-episode lines and the error line of run without them.
func TestRunStripsTerminalSequencesFromProviderErrors(t *testing.T) {
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"no \u001b]0;pwned\u0007\u001b[2Jkey\u001b]52;c;aGk=\u001b\\ \u009b2Jhere \u202eexe"}}`)
	}))
	defer srv.Close()
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "FAKE_API_KEY=k"},
		"run", "--dataset", "demo", "--model", "openai-api/fake/model-x", "--parallel", "1", "--out", filepath.Join(t.TempDir(), "run"))
	r.wantExit(t, 3)
	textcheck.Has(t, "stderr", r.stderr, "Scenario-901 repeat 1: error")
	if n := strings.Count(r.stderr, "no key here exe"); n < 2 {
		t.Errorf("the refusal, stripped, is %d times in stderr, want 2 or more:\n%q", n, r.stderr)
	}
	if t.Failed() {
		t.FailNow()
	}
	assertNoTerminalSequences(t, "stderr", r.stderr)
}

// TestRunRecordsTheWireWithoutTheKey runs a scripted model behind the OpenAI protocol whose
// commands look for the key in the sandbox: the trajectory holds every request and response
// raw, the auth header redacted, and the key appears in no file of the run.
func TestRunRecordsTheWireWithoutTheKey(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	p := fakeProvider(t, fakemodel.Script{Turns: 4, Command: "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
		Answer: []string{"otel-demo/ConfigMap/flagd-config", "otel-demo/Service/frontend"}}, key)
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, p.env, "run", "--dataset", "demo", "--model", "openai/fake-model", "--tasks", "901", "--repeats", "1", "--out", out)
	r.wantExit(t, 0)
	if !textcheck.Has(t, "stdout", r.stdout, "Score 0.500") {
		t.FailNow()
	}
	traj := readTrajectory(t, filepath.Join(out, "episodes", "Scenario-901", "1"))
	kinds := map[string]int{}
	for line := range strings.Lines(traj) {
		var e struct {
			Kind   string            `json:"kind"`
			Header map[string]string `json:"header"`
			Body   json.RawMessage   `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("trajectory line %q: %v", line, err)
		}
		kinds[e.Kind]++
		if e.Kind != "request" {
			continue
		}
		if e.Header["Authorization"] != "[REDACTED]" {
			t.Errorf("request recorded with Authorization %q, want [REDACTED]: %s", e.Header["Authorization"], line)
		}
		if !strings.Contains(string(e.Body), `"messages"`) {
			t.Errorf("request recorded without its messages: %s", line)
		}
	}
	for _, kind := range []string{"request", "response", "turn"} {
		if kinds[kind] != 4 {
			t.Errorf("trajectory has %d %s lines, want 4 (all: %v)", kinds[kind], kind, kinds)
		}
	}
	if !strings.Contains(traj, "PATH=") {
		t.Error("the env command's output is not in the trajectory")
	}
	var header map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if err := json.Unmarshal(b, &header); err != nil {
		t.Errorf("run.json: %v\n%s", err, b)
	}
	if header["base_url"] != p.url {
		t.Errorf("run.json: base_url %v, want %s", header["base_url"], p.url)
	}
	if header["model"] != "openai/fake-model" {
		t.Errorf("run.json: model %v, want openai/fake-model", header["model"])
	}
	assertNoSecret(t, out, key)
	wantKinds(t, out, model.KindRequest, model.KindResponse, model.KindTurn, model.KindUnsent)
}

// readTrajectory reads an episode's trajectory, compressed or not.
func readTrajectory(t *testing.T, episode string) string {
	t.Helper()
	f, err := runfolder.OpenTrajectory(episode)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// assertNoSecret fails when any file under dir holds secret (compressed trajectories are read
// decompressed).
func assertNoSecret(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		content, _ := os.ReadFile(path)
		if d.Name() == runfolder.TrajectoryFile+".zst" {
			content = []byte(readTrajectory(t, filepath.Dir(path)))
		}
		if strings.Contains(string(content), secret) {
			t.Errorf("%s holds the key", path)
		}
		return nil
	})
}

// episodeFields is what two runs of the same replies must share: per episode, the status,
// score, turns and tokens.
func episodeFields(t *testing.T, run string) string {
	t.Helper()
	fields, err := readEpisodeFields(run)
	if err != nil {
		t.Fatal(err)
	}
	return fields
}

// readEpisodeFields is episodeFields for the Go tests and the script tests' sameepisodes alike.
func readEpisodeFields(run string) (string, error) {
	b, err := os.ReadFile(filepath.Join(run, "results.jsonl"))
	if err != nil {
		return "", err
	}
	var out []string
	for line := range strings.Lines(string(b)) {
		var r struct {
			Task, Status  string
			Repeat, Turns int
			Score         float64
			Tokens        map[string]int
		}
		_ = json.Unmarshal([]byte(line), &r) // a line that is no result compares as an empty one, in both runs
		out = append(out, fmt.Sprintf("%s/%d %s %.3f %d %v", r.Task, r.Repeat, r.Status, r.Score, r.Turns, r.Tokens))
	}
	slices.Sort(out)
	return strings.Join(out, "\n"), nil
}

// TestRunWithResponsesProvider runs one demo episode with openai-responses/ against a fake
// Responses API: the model writes its diagnosis with the shell tool and submits it, and its
// encrypted reasoning reaches the second call through the real loop.
func TestRunWithResponsesProvider(t *testing.T) {
	const key = "sk-responses-test-key-77"
	var mu sync.Mutex
	var requests [][]byte
	var auth []string
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		requests, auth = append(requests, body), append(auth, r.Header.Get("Authorization"))
		if r.URL.Path != "/v1/responses" {
			http.NotFound(w, r)
			return
		}
		call := map[string]any{"type": "function_call", "call_id": "call_write", "name": "code_exec",
			"arguments": `{"cmd": "echo '{\"contributing_factors\": [{\"name\": \"otel-demo/ConfigMap/flagd-config\"}]}' > agent_output.json"}`}
		if len(requests) > 1 {
			call = map[string]any{"type": "function_call", "call_id": "call_finish", "name": "finish",
				"arguments": `{"reason": "done", "paths": ["agent_output.json"]}`}
		}
		json.NewEncoder(w).Encode(map[string]any{"status": "completed", "error": nil, "output": []any{
			map[string]any{"id": "rs_1", "type": "reasoning", "encrypted_content": "enc-turn", "summary": []any{}}, call},
			"usage": map[string]any{"input_tokens": 1000, "output_tokens": 50}})
	}))
	defer srv.Close()
	// The reference loop sends back no reasoning item and no store field, as the reference
	// client; the lenient loop calls statelessly and sends the encrypted reasoning back.
	for _, loop := range []struct{ name, kinds string }{
		{"reference", "user,function_call,function_call_output"}, // the user's item has a role, no type
		{"lenient", "message,reasoning,function_call,function_call_output"},
	} {
		mu.Lock()
		requests, auth = nil, nil
		mu.Unlock()
		t.Run(loop.name, func(t *testing.T) { responsesRun(t, srv.URL, key, loop.name, loop.kinds, &mu, &requests, &auth) })
	}
}

// responsesRun is one run of TestRunWithResponsesProvider, with the loop given, checked
// against the second request's input items.
func responsesRun(t *testing.T, url, key, loop, kinds string, mu *sync.Mutex, requestsp *[][]byte, authp *[]string) {
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=" + key},
		"run", "--dataset", "demo", "--model", "openai-responses/gpt-test", "--tasks", "901", "--repeats", "1", "--out", out, "--loop", loop)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	mu.Lock()
	defer mu.Unlock()
	requests, auth := *requestsp, *authp
	r.wantExit(t, 0)
	if len(requests) != 2 {
		t.Errorf("%d requests, want 2", len(requests))
	}
	if !textcheck.Has(t, "results.jsonl", string(results), `"status":"ok"`) {
		t.FailNow()
	}
	if auth[0] != "Bearer "+key {
		t.Errorf("Authorization = %q", auth[0])
	}
	textcheck.Lacks(t, "the output", r.stdout+r.stderr, key)
	var second struct {
		Store *bool            `json:"store"`
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(requests[1], &second); err != nil {
		t.Fatal(err)
	}
	sent := []string{}
	for _, it := range second.Input {
		kind, _ := it["type"].(string)
		if kind == "" {
			kind, _ = it["role"].(string)
		}
		sent = append(sent, kind)
	}
	if got := strings.Join(sent, ","); got != kinds {
		t.Errorf("second request: input items %s, want %s", got, kinds)
	}
	if (second.Store != nil) != (loop == "lenient") {
		t.Errorf("second request: store sent %v, want it sent only by the lenient loop (%s)", second.Store != nil, loop)
	}
	if second.Store != nil && *second.Store {
		t.Errorf("second request: store true, want false")
	}
	if t.Failed() {
		t.Fatalf("second request: %s", requests[1])
	}
	if loop == "lenient" {
		if got := second.Input[1]["encrypted_content"]; got != "enc-turn" {
			t.Errorf("second request: input 1's encrypted_content %v, want enc-turn", got)
		}
		if got := second.Input[1]["id"]; got != nil {
			t.Errorf("second request: input 1's id %v, want none", got)
		}
		if got := second.Input[2]["call_id"]; got != "call_write" {
			t.Errorf("second request: input 2's call_id %v, want call_write", got)
		}
		if t.Failed() {
			t.Fatalf("second request: %s", requests[1])
		}
	}
	err := filepath.WalkDir(out, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if b, _ := os.ReadFile(path); strings.Contains(string(b), key) {
			t.Errorf("the key is in %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRunPresetsAndPrices runs against a fake OpenAI server that answers every call with text
// and known usage (1,000 prompt tokens of which 400 cached, 500 completion tokens), one turn
// per episode: a preset sends its model id and effort and prices the tokens, flags override
// both, and a spec without prices leaves the cost unknown (null), never zero.
func TestRunPresetsAndPrices(t *testing.T) {
	type call struct{ Model, Effort string }
	calls := make(chan call, 10)
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Model  string `json:"model"`
			Effort string `json:"reasoning_effort"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		calls <- call{body.Model, body.Effort}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"Looking."}}],
			"usage":{"prompt_tokens":1000,"completion_tokens":500,"prompt_tokens_details":{"cached_tokens":400}}}`)
	}))
	defer srv.Close()
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-test"}
	cost := func(v float64) *float64 { return &v }
	for _, c := range []struct {
		name     string
		flags    []string
		call     call
		prices   string // run.json's prices
		wantCost *float64
	}{
		{"preset", []string{"--model", "gpt-5.5-xhigh"}, call{"gpt-5.5", "xhigh"},
			`{"input":5,"cached_read":0.5,"output":30}`, cost((600*5 + 400*0.5 + 500*30) / 1e6)},
		{"preset with flags", []string{"--model", "gpt-5.5-xhigh", "--reasoning-effort", "high", "--price-output", "10"}, call{"gpt-5.5", "high"},
			`{"input":5,"cached_read":0.5,"output":10}`, cost((600*5 + 400*0.5 + 500*10) / 1e6)},
		{"spec with one price", []string{"--model", "openai/gpt-5.5", "--price-input", "2"}, call{"gpt-5.5", ""},
			`{"input":2,"output":0}`, cost(1000 * 2 / 1e6)},
		{"spec without prices", []string{"--model", "openai/gpt-5.5"}, call{"gpt-5.5", ""}, `null`, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			args := append([]string{"run", "--dataset", "demo", "--tasks", "901", "--repeats", "1", "--max-turns", "1", "--out", out}, c.flags...)
			r := aaGrade(t, env, args...)
			if r.code != 0 {
				t.Fatalf("exit %d\n%s", r.code, r.stderr)
			}
			if got := <-calls; got != c.call {
				t.Errorf("the provider was asked for %+v, want %+v", got, c.call)
			}
			if model, prices := runHeader(t, out); model != "openai/gpt-5.5" || prices != c.prices {
				t.Errorf("run.json: model %s, prices %s; want openai/gpt-5.5 and %s", model, prices, c.prices)
			}
			var result struct {
				Status string   `json:"status"`
				Cost   *float64 `json:"cost_usd"`
			}
			b, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
			if json.Unmarshal(b, &result) != nil || result.Status != "max_turns" {
				t.Fatalf("results.jsonl = %s", b)
			}
			if (result.Cost == nil) != (c.wantCost == nil) || (result.Cost != nil && math.Abs(*result.Cost-*c.wantCost) > 1e-12) {
				t.Errorf("cost_usd in %s, want %v", b, fmtCost(c.wantCost))
			}
		})
	}
}

// runHeader returns the model spec and the prices (compact JSON) in run.json.
func runHeader(t *testing.T, out string) (model, prices string) {
	t.Helper()
	var header struct {
		Model  string          `json:"model"`
		Prices json.RawMessage `json:"prices"`
	}
	b, _ := os.ReadFile(filepath.Join(out, "run.json"))
	var compact bytes.Buffer
	if json.Unmarshal(b, &header) != nil || json.Compact(&compact, header.Prices) != nil {
		t.Fatalf("run.json = %s", b)
	}
	return header.Model, compact.String()
}

func fmtCost(v *float64) string {
	if v == nil {
		return "null"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// TestRunBaselinePrices: builtin/baseline calls no API, so its cost is a known zero. Resuming
// with other prices is not refused (prices change no episode): the finished episode is kept
// and run.json carries the new prices.
func TestRunBaselinePrices(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--tasks", "Scenario-901", "--repeats", "1", "--model", "builtin/baseline", "--out", out}
	for _, c := range []struct{ flags, prices string }{
		{"", `{"input":0,"output":0}`},
		{"--price-input 1 --price-output 2", `{"input":1,"output":2}`},
	} {
		if r := aaGrade(t, env, append(args, strings.Fields(c.flags)...)...); r.code != 0 {
			t.Fatalf("%q: exit %d\n%s", c.flags, r.code, r.stderr)
		}
		results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
		if _, got := runHeader(t, out); strings.Count(string(results), `"cost_usd":0,`) != 1 || got != c.prices {
			t.Errorf("%q: results %s\nrun.json prices %s, want %s", c.flags, results, got, c.prices)
		}
	}
}

func TestRunUnknownPresetAndBadPrice(t *testing.T) {
	r := aaGrade(t, nil, "run", "--dataset", "demo", "--model", "gpt-9")
	r.checkExit(t, 2)
	textcheck.Has(t, "stderr of an unknown preset", r.stderr, `"gpt-9" is neither PROVIDER/MODEL nor a preset`, "; aa-grade models lists them",
		"claude-opus-4-7-max", "gemma-4-31b")
	r = aaGrade(t, []string{"AA_GRADE_PRICE_CACHED_READ=-0.5"}, "run", "--dataset", "demo", "--model", "builtin/baseline")
	if r.code != 2 || !strings.Contains(r.stderr, "--price-cached-read -0.5") {
		t.Errorf("negative price: exit %d\n%s", r.code, r.stderr)
	}
}

// TestRunLimitsCallsInFlight: two episodes run at once but --max-in-flight 1 (here through
// its environment variable) lets one model call through at a time. The server holds the
// first call until a second arrives, or for 2 s, so a second call let through is seen.
func TestRunLimitsCallsInFlight(t *testing.T) {
	var inFlight, calls atomic.Int32
	var overlapped atomic.Bool
	second := make(chan struct{})
	arrived := sync.OnceFunc(func() { close(second) })
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		if inFlight.Add(1) > 1 {
			overlapped.Store(true)
			arrived()
		}
		if calls.Add(1) == 1 {
			select {
			case <-second:
			case <-time.After(2 * time.Second):
			}
		}
		inFlight.Add(-1)
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"looking"}}]}`) // no usage: recorded as such
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "AA_GRADE_MAX_IN_FLIGHT=1"},
		"run", "--dataset", "demo", "--tasks", "901", "--repeats", "2", "--parallel", "2", "--max-turns", "1",
		"--model", "openai-api/fake/model-x", "--out", out)
	r.wantExit(t, 0)
	if n := calls.Load(); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	if overlapped.Load() {
		t.Error("two calls at once, with at most one in flight")
	}
	if t.Failed() {
		t.FailNow()
	}
	wantKinds(t, out, model.KindQueued, model.KindPaced, model.KindNoUsage)
}

// TestRunRecordsRateLimits: the limits the provider's answers state, and the 429s, are in the
// summary at the end of a run and in run.json.
func TestRunRecordsRateLimits(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("x-ratelimit-limit-requests", "500")
		w.Header().Set("x-ratelimit-limit-tokens", "200000")
		if calls.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"looking"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL},
		"run", "--dataset", "demo", "--tasks", "901", "--repeats", "1", "--max-turns", "1", "--model", "openai-api/fake/model-x", "--out", out)
	if want := "Rate limits: limits a minute: 500 requests (stated), 200k tokens (stated); calls waited 0s in all for them, 1 of 2 answered 429\n"; r.code != 0 ||
		!strings.Contains(r.stdout, want) {
		t.Fatalf("exit %d, want %q in\n%s\n%s", r.code, want, r.stdout, r.stderr)
	}
	h, err := runfolder.ReadHeader(out)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := json.Marshal(h.RateLimits); string(got) != `{"limits":[{"name":"requests","learnt":500},{"name":"tokens","learnt":200000}],"calls":2,"rate_limited":1,"waited_s":0}` {
		t.Fatalf("run.json rate_limits: %s", got)
	}
	wantKinds(t, out, model.KindThrottle, model.KindRetry)
}

// TestRunLogsRetries: a provider that fails the first call (a 503) and refuses to answer the
// others until then: the log (--no-progress) has a line for the retry with the failure and the
// next attempt's time, and the episode's line counts it.
func TestRunLogsRetries(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		if calls.Add(1) == 1 {
			w.Header().Set("retry-after-ms", "10")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `{"error":{"message":"overloaded"}}`)
			return
		}
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"looking"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL},
		"run", "--dataset", "demo", "--tasks", "901", "--repeats", "1", "--max-turns", "1", "--model", "openai-api/fake/model-x",
		"--no-progress", "--out", out)
	retry := regexp.MustCompile(`Scenario-901 repeat 1: retry 1: attempt 1 failed: HTTP 503: overloaded; next attempt in 0s \(at \d\d:\d\d:\d\d\)\n`)
	r.wantExit(t, 0)
	if !retry.MatchString(r.stderr) {
		t.Errorf("no line of the retry (%s) in stderr", retry)
	}
	if !textcheck.Has(t, "stderr", r.stderr, "Scenario-901 repeat 1: max_turns, score 0.00, 1 turn, cost unknown, retries 1\n") || t.Failed() {
		t.Fatalf("stderr:\n%s", r.stderr)
	}

	wantKinds(t, out, model.KindRetry, model.KindRequest, model.KindResponse, model.KindTurn)
}

// TestBaselineIsDeterministic: builtin/baseline run twice gives the same conversation, so a
// replay of its run follows the recording in every episode (its script once printed its
// suspects in the order Python's randomised string hashing gave them).
func TestBaselineIsDeterministic(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	run := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, env, "run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "2", "--out", run); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	r := aaGrade(t, env, "run", "--model", "replay/"+run, "--out", filepath.Join(t.TempDir(), "replayed"))
	if r.code != 0 || !strings.Contains(r.stderr, "every episode followed its recording") {
		t.Fatalf("replay: exit %d\n%s", r.code, r.stderr)
	}
	// It costs what the recording did: a known 0, not unknown.
	if strings.Contains(r.stderr, "cost unknown") || !strings.Contains(r.stderr, "cost $0") {
		t.Errorf("the replay's cost is not the recording's:\n%s", r.stderr)
	}
}

// TestReplaySummaryLineIsTrue: the replay's last line claims every episode followed its
// recording only when none diverged and none ended in error.
func TestReplaySummaryLineIsTrue(t *testing.T) {
	for _, c := range []struct {
		failed int
		want   string
	}{{0, "replay: every episode followed its recording\n"}, {2, "replay: 2 episodes ended in error (above); the others followed their recording\n"}} {
		var b bytes.Buffer
		reportDivergences(&b, nil, c.failed)
		if b.String() != c.want {
			t.Errorf("%d failed: %q, want %q", c.failed, b.String(), c.want)
		}
	}
}

// TestRunStopsAtOnceOnAnUnreachableProvider: a base URL where nothing listens stops the run
// at the check before its first episode (no result line, not a clock), exit 3, naming the
// URL and the variable that set it.
func TestRunStopsAtOnceOnAnUnreachableProvider(t *testing.T) {
	base := "http://" + closedport.Addr(t) + "/v1"
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + base},
		"run", "--dataset", "demo", "--model", "openai-api/fake/m1", "--parallel", "1", "--no-progress", "--out", out)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if r.code != 3 || strings.Count(string(results), "\n") != 0 {
		t.Fatalf("exit %d, %d results\n%s", r.code, strings.Count(string(results), "\n"), r.stderr)
	}
	// Before it started, the run said what it knew of the cost.
	if !strings.Contains(r.stderr, "estimate: unknown: openai-api/fake/m1 has no published cost a task and no prices") {
		t.Errorf("no estimate before the run:\n%s", r.stderr)
	}
	last := lastLine(r.stderr)
	for _, want := range []string{"cannot reach the provider", base, "FAKE_BASE_URL", "connection refused"} {
		if !strings.Contains(last, want) {
			t.Errorf("the error line does not say %q: %s", want, last)
		}
	}
}

// TestRunLimitAndSample: --limit N plays the first N tasks, --sample K --seed S the same K
// tasks in two folders; run.json records the selection, and a resume with another is refused
// naming it.
func TestRunLimitAndSample(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	base := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "1", "--no-progress"}
	header := func(out string) runfolder.Header {
		h, err := runfolder.ReadHeader(out)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	limited := filepath.Join(t.TempDir(), "limited")
	if r := aaGrade(t, env, append(base, "--limit", "1", "--out", limited)...); r.code != 0 {
		t.Fatalf("--limit 1: exit %d\n%s", r.code, r.stderr)
	}
	h := header(limited)
	if h.Limit != 1 {
		t.Errorf("--limit 1: run.json has limit %d", h.Limit)
	}
	if !slices.Equal(h.Tasks, []string{"Scenario-901"}) {
		t.Errorf("--limit 1: run.json has tasks %v, want [Scenario-901]", h.Tasks)
	}
	if t.Failed() {
		t.FailNow()
	}
	r := aaGrade(t, env, append(base, "--limit", "2", "--out", limited)...)
	if r.code != 2 || !strings.Contains(r.stderr, "limit was 1, now 2") {
		t.Fatalf("a resume with another limit: exit %d\n%s", r.code, r.stderr)
	}
	var sampled [][]string
	for _, name := range []string{"a", "b"} {
		out := filepath.Join(t.TempDir(), name)
		if r := aaGrade(t, env, append(base, "--sample", "1", "--seed", "5", "--out", out)...); r.code != 0 {
			t.Fatalf("--sample 1: exit %d\n%s", r.code, r.stderr)
		}
		h := header(out)
		if h.Sample != 1 {
			t.Errorf("--sample 1 --seed 5: run.json has sample %d", h.Sample)
		}
		if h.Seed != 5 {
			t.Errorf("--sample 1 --seed 5: run.json has seed %d", h.Seed)
		}
		if len(h.Tasks) != 1 {
			t.Errorf("--sample 1 --seed 5: run.json has tasks %v, want one", h.Tasks)
		}
		if t.Failed() {
			t.FailNow()
		}
		sampled = append(sampled, h.Tasks)
	}
	if sampled[0][0] != sampled[1][0] {
		t.Fatalf("the same seed sampled %v and %v", sampled[0], sampled[1])
	}
}

// withModelsList serves a fake provider's calls with h, and its models list (GET .../models,
// which run asks before its first call) with an empty list, as the providers answer it.
func withModelsList(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"object":"list","data":[]}`)
			return
		}
		h(w, r)
	})
}
