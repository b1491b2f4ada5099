package main

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// alwaysAnswering is a provider on 127.0.0.1 that answers every call with code and body; it
// counts the calls.
func alwaysAnswering(t *testing.T, code int, contentType, body string) (url string, calls *atomic.Int64) {
	calls = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		calls.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, calls
}

// resultLines counts the lines of a run folder's results.jsonl.
func resultLines(out string) int {
	b, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	return strings.Count(string(b), "\n")
}

// TestRunStopsOnAPermanentRefusal: a quota refusal sent as a 429, an ordinary web server's
// 501 page and a 200 HTML page each stop the run at its first call (one call made, one result
// recorded, no other episode started), exit 3, the last line naming the base URL, the
// variable that set it and the provider's own words.
func TestRunStopsOnAPermanentRefusal(t *testing.T) {
	page := "<!DOCTYPE html><html><body><h1>Welcome to nginx!</h1></body></html>"
	for _, c := range []struct {
		name, contentType, body, words string
		code                           int
	}{
		{"insufficient_quota", "application/json", `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`,
			"You exceeded your current quota", 429},
		{"501 page", "text/html", page, "Welcome to nginx", 501},
		{"200 page", "text/html", page, "Welcome to nginx", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			url, calls := alwaysAnswering(t, c.code, c.contentType, c.body)
			out := filepath.Join(t.TempDir(), "run")
			r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789"},
				"run", "--dataset", "demo", "--model", "openai/gpt-test", "--parallel", "1", "--no-progress", "--out", out)
			r.wantExit(t, 3)
			if n := calls.Load(); n != 1 {
				t.Errorf("%d calls, want 1", n)
			}
			if n := resultLines(out); n != 1 {
				t.Errorf("%d results recorded, want 1", n)
			}
			textcheck.Has(t, "the last line", lastLine(r.stderr), "refused", url+"/v1", "OPENAI_BASE_URL", c.words, "the run stopped")
		})
	}
}

// TestRunFailOnError: episodes whose calls fail with a transient error past --max-retry-time
// end in error, and --fail-on-error 2 stops the run at the second (two results recorded),
// exit 3, saying why; a bad value is refused naming the flag.
func TestRunFailOnError(t *testing.T) {
	url, _ := alwaysAnswering(t, 503, "application/json", `{"error":{"message":"upstream overloaded"}}`)
	out := filepath.Join(t.TempDir(), "run")
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789"}
	r := aaGrade(t, env, "run", "--dataset", "demo", "--model", "openai/gpt-test", "--parallel", "1", "--no-progress", "--out", out,
		"--max-retry-time", "1ms", "--fail-on-error", "2")
	r.wantExit(t, 3)
	if n := resultLines(out); n != 2 {
		t.Errorf("%d results recorded, want 2", n)
	}
	textcheck.Has(t, "the last line", lastLine(r.stderr), "too many episodes ended in error", "--fail-on-error", "HTTP 503: upstream overloaded", "the retry time is 1ms")
	for _, bad := range []string{"-1", "2.5"} {
		oneErrorLine(t, aaGrade(t, env, "run", "--dataset", "demo", "--model", "openai/gpt-test", "--fail-on-error", bad, "--out", filepath.Join(t.TempDir(), "r")),
			"--fail-on-error "+bad+": must be 0 (never), a count of episodes from 1, or a fraction between 0 and 1")
	}
}
