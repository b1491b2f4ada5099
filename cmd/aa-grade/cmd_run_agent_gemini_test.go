//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsoncheck"
)

// TestGeminiCLIRun: run --agent gemini-cli with a google/ model plays an episode with the real
// Gemini CLI (installed by .ci/run from npm) through the gateway, against a scripted model
// speaking the Gemini API, to a graded result on bwrap, landlock and docker (whose test image
// has no Node.js: this machine's node and CLI are shown). The key is in no file of the run
// folder.
func TestGeminiCLIRun(t *testing.T) {
	if _, err := exec.LookPath("gemini"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("gemini is not installed under CI (npm install -g @google/gemini-cli)")
		}
		t.Skip("gemini is not installed (npm install -g @google/gemini-cli)")
	}
	key := fmt.Sprintf("gk-canary-%x", time.Now().UnixNano())
	answer, _ := json.Marshal(answer901)
	fake := &fakecli.Server{Script: fakecli.Script{Command: "ls alerts | head -2 && echo '" + string(answer) + "' > agent_output.json", Final: "The answer is written."}}
	srv := httptest.NewServer(fake)
	defer srv.Close()
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "GOOGLE_GEMINI_BASE_URL=" + srv.URL, "GEMINI_API_KEY=" + key}
	sandboxes := [][]string{{"--sandbox", "bwrap"}, {"--sandbox", "landlock"}}
	if img := os.Getenv("AA_GRADE_TEST_IMAGE"); img != "" {
		sandboxes = append(sandboxes, []string{"--sandbox", "docker", "--sandbox-image", img})
	}
	for _, sb := range sandboxes {
		t.Run(sb[1], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			r := aaGrade(t, env, append([]string{"run", "--dataset", "demo", "--model", "google/gemini-fake", "--agent", "gemini-cli",
				"--tasks", "901", "--repeats", "1", "--out", out}, sb...)...)
			if r.code != 0 || !strings.Contains(r.stdout, "Episodes: 1 ok") {
				t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			jsoncheck.Fields(t, "run.json", gjson.Parse(readFile(t, filepath.Join(out, "run.json"))),
				map[string]string{"agent.spec": "gemini-cli", "agent.protocol": "Google Gemini", "agent.version": "0.61.0"})
			res := gjson.Parse(readFile(t, filepath.Join(out, "results.jsonl")))
			if status := res.Get("status").String(); status != "ok" {
				t.Errorf("status %q, want ok: %s", status, res.Raw)
			}
			if res.Get("score").Float() <= 0 {
				t.Errorf("score %s, want the answer graded above 0", res.Get("score").Raw)
			}
			if turns := res.Get("turns").Int(); turns < 2 {
				t.Errorf("%d turns, want the command's and the answer's at least", turns)
			}
			if res.Get("tokens.input").Int() == 0 {
				t.Errorf("no input tokens counted: %s", res.Raw)
			}
			t.Logf("%s: score %v in %d turns", sb[1], res.Get("score").Float(), res.Get("turns").Int())
			filepath.WalkDir(out, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				if b, err := os.ReadFile(path); err != nil || bytes.Contains(b, []byte(key)) {
					t.Errorf("%s holds the key (or cannot be read: %v)", path, err)
				}
				return nil
			})
			if kinds := checkTrajectories(t, out); kinds["turn"] < 2 || kinds["agent"] != 1 {
				t.Errorf("the trajectory's lines: %v", kinds)
			}
		})
	}
}
