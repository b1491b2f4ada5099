//go:build linux

package main

import (
	"fmt"
	"io"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsoncheck"
)

// TestGoogleModelRun: aa-grade's own loop plays an episode with a google/ model over the Gemini
// API (a scripted one on 127.0.0.1) to a graded result: the tools as function declarations,
// the key in x-goog-api-key and nowhere in the run folder's trajectory.
func TestGoogleModelRun(t *testing.T) {
	key := fmt.Sprintf("gk-canary-%x", time.Now().UnixNano())
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: 3, Command: "ls alerts | head -2", Answer: answer901}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir(), "GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_API_KEY=" + key},
		"run", "--dataset", "demo", "--model", "google/gemini-fake", "--tasks", "901", "--repeats", "1", "--out", out)
	if r.code != 0 || !strings.Contains(r.stdout, "Episodes: 1 ok") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	res := gjson.Parse(readFile(t, filepath.Join(out, "results.jsonl")))
	jsoncheck.Fields(t, "the result", res, map[string]string{"status": "ok", "turns": "3", "tokens.output": "60"})
	if res.Get("score").Float() <= 0 {
		t.Errorf("score %s, want the answer graded above 0", res.Get("score").Raw)
	}
	jsoncheck.Fields(t, "the first request", gjson.ParseBytes(fake.Bodies()[0]),
		map[string]string{"contents.0.role": "user", "systemInstruction.parts.#": "1", "tools.0.functionDeclarations.#": "2"})
	tr, err := runfolder.OpenTrajectory(filepath.Join(out, "episodes", "Scenario-901", "1"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(tr)
	tr.Close()
	if err != nil {
		t.Fatal(err)
	}
	if trajectory := string(b); strings.Contains(trajectory, key) || !strings.Contains(trajectory, `"X-Goog-Api-Key":"[REDACTED]"`) {
		t.Errorf("the trajectory holds the key, or does not show its header redacted")
	}
	if kinds := checkTrajectories(t, out); kinds["turn"] != 3 {
		t.Errorf("the trajectory's lines: %v", kinds)
	}
}
