package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// alwaysAnswering is a provider on 127.0.0.1 that answers every model call with code and
// body, and its models list (GET, the check before a run) the same unless listing; it counts
// the model calls.
func alwaysAnswering(t *testing.T, listing bool, code int, contentType, body string) (url string, calls *atomic.Int64) {
	calls = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet && listing {
			io.WriteString(w, `{"object":"list","data":[{"id":"gpt-test"}]}`)
			return
		}
		calls.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.Header().Set("Retry-After", "300") // honoured by a transient failure's retry
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
// 501 page and a 200 HTML page each stop the run, exit 3, the last line naming the base URL,
// the variable that set it and the provider's own words: at the check of the endpoint before
// the first episode when the models list answers so (one call, nothing recorded, no folder
// left), else at the first model call (one call made, one result recorded, no other episode
// started).
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
		for _, listing := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, listing %v", c.name, listing), func(t *testing.T) {
				url, calls := alwaysAnswering(t, listing, c.code, c.contentType, c.body)
				out := filepath.Join(t.TempDir(), "run")
				r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + url + "/v1", "OPENAI_API_KEY=sk-test-0123456789"},
					"run", "--dataset", "demo", "--model", "openai/gpt-test", "--parallel", "1", "--no-progress", "--out", out)
				r.wantExit(t, 3)
				if n := calls.Load(); n != 1 {
					t.Errorf("%d calls, want 1", n)
				}
				textcheck.Has(t, "the last line", lastLine(r.stderr), "refused", url+"/v1", "OPENAI_BASE_URL", c.words)
				if !listing {
					textcheck.Has(t, "the last line", lastLine(r.stderr), "the check of the model's endpoint before the first call", "nothing was played")
					if _, err := os.Stat(out); err == nil {
						t.Error("the run left its folder")
					}
					return
				}
				if n := resultLines(out); n != 1 {
					t.Errorf("%d results recorded, want 1", n)
				}
				textcheck.Has(t, "the last line", lastLine(r.stderr), "the run stopped")
			})
		}
	}
}

// TestRunFailOnError: episodes whose calls fail with a transient error past --max-retry-time
// end in error, and --fail-on-error 2 stops the run at the second (two results recorded),
// exit 3, saying why; a bad value is refused naming the flag.
func TestRunFailOnError(t *testing.T) {
	url, _ := alwaysAnswering(t, true, 503, "application/json", `{"error":{"message":"upstream overloaded"}}`)
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

// TestRunChecksBeforeTheFirstCall: a run that starts says the room its episodes will take and
// that the endpoint answered (a read-only results.jsonl, found before the first call, is
// TestRunFindsAReadOnlyResultsFirst, as a normal user).
func TestRunChecksBeforeTheFirstCall(t *testing.T) {
	srv := fakeProvider(t, fakemodel.Script{Turns: 2, Command: "ls"}, "sk-test-0123456789")
	out := filepath.Join(t.TempDir(), "run")
	args := []string{"run", "--dataset", "demo", "--model", "openai/gpt-test", "--tasks", "901", "--repeats", "1", "--no-progress", "--out", out}
	r := aaGrade(t, srv.env, args...)
	r.wantExit(t, 0)
	textcheck.Has(t, "stderr", r.stderr, "disk: the episodes will record about 8.0 MiB (1 episode at 8.0 MiB each, a guess on the high side); ",
		"endpoint: "+srv.url+" answered (its models list)")
}
