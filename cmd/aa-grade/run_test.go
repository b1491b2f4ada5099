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
		"no model":                {"run", "--dataset", "demo"},
		"unknown model":           {"run", "--dataset", "demo", "--model", "acme/x"},
		"missing key":             {"run", "--dataset", "demo", "--model", "openai/gpt-5.5"},
		"missing key (responses)": {"run", "--dataset", "demo", "--model", "openai-responses/gpt-5.5"},
		"bad sandbox":             {"run", "--dataset", "demo", "--model", "builtin/baseline", "--sandbox", "chroot"},
		"zero repeats":            {"run", "--dataset", "demo", "--model", "builtin/baseline", "--repeats", "0"},
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

// TestRunWithResponsesProvider runs one demo episode with openai-responses/ against a fake
// Responses API: the model writes its diagnosis with the shell tool and submits it, and its
// encrypted reasoning reaches the second call through the real loop.
func TestRunWithResponsesProvider(t *testing.T) {
	const key = "sk-responses-test-key-77"
	var mu sync.Mutex
	var requests [][]byte
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL + "/v1", "OPENAI_API_KEY=" + key},
		"run", "--dataset", "demo", "--model", "openai-responses/gpt-test", "--tasks", "901", "--repeats", "1", "--out", out)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	mu.Lock()
	defer mu.Unlock()
	if r.code != 0 || len(requests) != 2 || !strings.Contains(string(results), `"status":"ok"`) {
		t.Fatalf("exit %d after %d requests\n%s\n%s", r.code, len(requests), results, r.stderr)
	}
	if auth[0] != "Bearer "+key || strings.Contains(r.stdout+r.stderr, key) {
		t.Errorf("Authorization = %q", auth[0])
	}
	var second struct {
		Store bool             `json:"store"`
		Input []map[string]any `json:"input"`
	}
	if err := json.Unmarshal(requests[1], &second); err != nil {
		t.Fatal(err)
	}
	kinds := []string{}
	for _, it := range second.Input {
		kinds = append(kinds, it["type"].(string))
	}
	if second.Store || strings.Join(kinds, ",") != "message,reasoning,function_call,function_call_output" ||
		second.Input[1]["encrypted_content"] != "enc-turn" || second.Input[1]["id"] != nil || second.Input[2]["call_id"] != "call_write" {
		t.Fatalf("second request: %s", requests[1])
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
