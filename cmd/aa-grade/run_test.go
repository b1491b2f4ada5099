package main

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// TestRunBaselineOnDemo runs builtin/baseline over two demo tasks end to end, then runs the
// same command again: the second run finds every episode done and runs none.
func TestRunBaselineOnDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	args := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,906", "--repeats", "2", "--out", out}
	r := aaGrade(t, env, args...)
	if r.code != 0 || !strings.Contains(r.stdout, "Score 1.000") || !strings.Contains(r.stdout, "over 2 tasks x 2 repeats") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, f := range []string{"run.json", "results.jsonl", "summary.json", "episodes/Scenario-901/1/agent_output.json", "episodes/Scenario-906/2/trajectory.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
	var header map[string]any
	b, _ := os.ReadFile(filepath.Join(out, "run.json"))
	if json.Unmarshal(b, &header) != nil || header["model"] != "builtin/baseline" || len(header["prompt_sha256"].(string)) != 64 {
		t.Fatalf("run.json = %s", b)
	}
	before, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if n := strings.Count(string(before), "\n"); n != 4 {
		t.Fatalf("%d results", n)
	}
	again := aaGrade(t, env, args...)
	after, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if again.code != 0 || string(after) != string(before) || !strings.Contains(again.stdout, "Full recall in 100.0%") {
		t.Fatalf("resume ran episodes again or lost the summary: exit %d\n%s", again.code, again.stdout)
	}
	// Another configuration in the same folder is refused, naming what changed.
	changed := append(append([]string(nil), args...), "--max-turns", "30")
	if r := aaGrade(t, env, changed...); r.code != 2 || !strings.Contains(r.stderr, "max_turns was 100, now 30") {
		t.Fatalf("changed configuration: exit %d\n%s", r.code, r.stderr)
	}
}

func TestRunUsageErrors(t *testing.T) {
	for name, args := range map[string][]string{
		"no model":      {"run", "--dataset", "demo"},
		"unknown model": {"run", "--dataset", "demo", "--model", "acme/x"},
		"missing key":   {"run", "--dataset", "demo", "--model", "openai/gpt-5.5"},
		"bad sandbox":   {"run", "--dataset", "demo", "--model", "builtin/baseline", "--sandbox", "chroot"},
		"zero repeats":  {"run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "0"},
	} {
		t.Run(name, func(t *testing.T) {
			if r := aaGrade(t, []string{"OPENAI_API_KEY="}, args...); r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestRunStopsEarlyOnPermanentErrors: a provider that refuses the key fails the first
// episodes at once, and the run stops instead of going through every task.
func TestRunStopsEarlyOnPermanentErrors(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided"}}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "FAKE_API_KEY=sk-bad"},
		"run", "--dataset", "demo", "--model", "openai-api/fake/model-x", "--parallel", "1", "--out", out)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if r.code != 1 || !strings.Contains(r.stderr, "stopped") || !strings.Contains(r.stderr, "Incorrect API key") ||
		strings.Count(string(results), "\n") != 3 || calls.Load() != 3 {
		t.Fatalf("exit %d after %d calls, %d results\n%s", r.code, calls.Load(), strings.Count(string(results), "\n"), r.stderr)
	}
	if strings.Contains(string(results), "sk-bad") {
		t.Fatal("the key is in results.jsonl")
	}
}

// TestRunPresetsAndPrices runs against a fake OpenAI server that answers every call with text
// and known usage (1,000 prompt tokens of which 400 cached, 500 completion tokens), one turn
// per episode: a preset sends its model id and effort and prices the tokens, flags override
// both, and a spec without prices leaves the cost unknown (null), never zero.
func TestRunPresetsAndPrices(t *testing.T) {
	type call struct{ Model, Effort string }
	calls := make(chan call, 10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	if r.code != 2 || !strings.Contains(r.stderr, `"gpt-9" is neither PROVIDER/MODEL nor a preset`) ||
		!strings.Contains(r.stderr, "claude-opus-4-7-max") || !strings.Contains(r.stderr, "gemma-4-31b") {
		t.Errorf("unknown preset: exit %d\n%s", r.code, r.stderr)
	}
	r = aaGrade(t, []string{"AA_GRADE_PRICE_CACHED_READ=-0.5"}, "run", "--dataset", "demo", "--model", "builtin/baseline")
	if r.code != 2 || !strings.Contains(r.stderr, "--price-cached-read -0.5") {
		t.Errorf("negative price: exit %d\n%s", r.code, r.stderr)
	}
}
