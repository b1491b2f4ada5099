package main

import (
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
	"time"
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
		"negative rpm":  {"run", "--dataset", "demo", "--model", "builtin/baseline", "--rpm", "-1"},
		"negative tpm":  {"run", "--dataset", "demo", "--model", "builtin/baseline", "--tpm", "-1"},
		"no calls":      {"run", "--dataset", "demo", "--model", "builtin/baseline", "--max-in-flight", "-2"},
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

// TestRunLimitsCallsInFlight: two episodes run at once but --max-in-flight 1 (here through
// its environment variable) lets one model call through at a time. The server holds the
// first call until a second arrives, or for 2 s, so a second call let through is seen.
func TestRunLimitsCallsInFlight(t *testing.T) {
	var inFlight, calls atomic.Int32
	var overlapped atomic.Bool
	second := make(chan struct{})
	arrived := sync.OnceFunc(func() { close(second) })
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"looking"}}],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	}))
	defer srv.Close()
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "AA_GRADE_MAX_IN_FLIGHT=1"},
		"run", "--dataset", "demo", "--tasks", "901", "--repeats", "2", "--parallel", "2", "--max-turns", "1",
		"--model", "openai-api/fake/model-x", "--out", filepath.Join(t.TempDir(), "run"))
	if r.code != 0 || calls.Load() != 2 || overlapped.Load() {
		t.Fatalf("exit %d, %d calls, two at once: %v\n%s", r.code, calls.Load(), overlapped.Load(), r.stderr)
	}
}
