package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestInterruptCutsABackOff: Ctrl-C while an episode waits 5 minutes (Retry-After) for its
// next attempt ends the wait at once: the run exits 130 well within its 10 minutes of grace,
// the episode recorded unfinished (a resume plays it again), not in error.
func TestInterruptCutsABackOff(t *testing.T) {
	url, calls := alwaysAnswering(t, true, http.StatusTooManyRequests, "application/json", `{"error":{"message":"Rate limit reached","code":"rate_limit_exceeded"}}`)
	out := filepath.Join(t.TempDir(), "run")
	cmd, stderr := start(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789"},
		"run", "--dataset", "demo", "--model", "openai/gpt-test", "--tasks", "901", "--repeats", "1", "--no-progress", "--out", out, "--grace", "10m")
	waitFor(t, func() bool { return calls.Load() >= 1 })
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	textcheck.Has(t, "results.jsonl", string(results), `"status":"unfinished"`)
}
