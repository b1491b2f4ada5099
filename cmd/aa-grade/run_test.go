package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/internal/fakemodel"
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
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: sk-bad-key-echoed"}}`)
	}))
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "FAKE_BASE_URL=" + srv.URL, "FAKE_API_KEY=sk-bad-key-echoed"},
		"run", "--dataset", "demo", "--model", "openai-api/fake/model-x", "--parallel", "1", "--out", out)
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if r.code != 1 || !strings.Contains(r.stderr, "stopped") || !strings.Contains(r.stderr, "Incorrect API key") ||
		strings.Count(string(results), "\n") != 3 || calls.Load() != 3 {
		t.Fatalf("exit %d after %d calls, %d results\n%s", r.code, calls.Load(), strings.Count(string(results), "\n"), r.stderr)
	}
	// The provider quoted the key back: it is redacted everywhere, the trajectory included.
	assertNoSecret(t, out, "sk-bad-key-echoed")
	if traj, _ := os.ReadFile(filepath.Join(out, "episodes", "Scenario-901", "1", "trajectory.jsonl")); !strings.Contains(string(traj), "Incorrect API key provided: [REDACTED]") {
		t.Fatalf("the refusal is not in the trajectory:\n%s", traj)
	}
}

// TestRunRecordsTheWireWithoutTheKey runs a scripted model behind the OpenAI protocol whose
// commands look for the key in the sandbox: the trajectory holds every request and response
// raw, the auth header redacted, and the key appears in no file of the run.
func TestRunRecordsTheWireWithoutTheKey(t *testing.T) {
	const key = "sk-live-0123456789abcdef"
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: 4, Command: "env; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n'",
		Answer: []string{"otel-demo/NetworkPolicy/ad-deny-ingress", "otel-demo/Service/frontend"}}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=" + key},
		"run", "--dataset", "demo", "--model", "openai/fake-model", "--tasks", "901", "--repeats", "1", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "Score 0.500") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	traj, err := os.ReadFile(filepath.Join(out, "episodes", "Scenario-901", "1", "trajectory.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	for line := range strings.Lines(string(traj)) {
		var e struct {
			Kind   string            `json:"kind"`
			Header map[string]string `json:"header"`
			Body   json.RawMessage   `json:"body"`
		}
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("trajectory line %q: %v", line, err)
		}
		kinds[e.Kind]++
		if e.Kind == "request" && (e.Header["Authorization"] != "[REDACTED]" || !strings.Contains(string(e.Body), `"messages"`)) {
			t.Errorf("request recorded as %s", line)
		}
	}
	if kinds["request"] != 4 || kinds["response"] != 4 || kinds["turn"] != 4 {
		t.Errorf("trajectory has %v, want 4 requests, responses and turns", kinds)
	}
	if !strings.Contains(string(traj), "PATH=") {
		t.Error("the env command's output is not in the trajectory")
	}
	assertNoSecret(t, out, key)
}

// assertNoSecret fails when any file under dir holds secret.
func assertNoSecret(t *testing.T, dir, secret string) {
	t.Helper()
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if b, _ := os.ReadFile(path); strings.Contains(string(b), secret) {
				t.Errorf("%s holds the key", path)
			}
		}
		return nil
	})
}
