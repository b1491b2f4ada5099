//go:build linux

package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunFindsAReadOnlyResultsFirst: a resume whose results.jsonl is read-only stops before
// anything is played (no model call, the file as it was), exit 3, naming the file (issue 36).
// Root writes read-only files, so it runs as the normal user (AA_GRADE_TEST_USER when the
// test runs as root, else the test's own).
func TestRunFindsAReadOnlyResultsFirst(t *testing.T) {
	srv := fakeProvider(t, fakemodel.Script{Turns: 2, Command: "ls"}, "sk-test-0123456789")
	env := []string{"OPENAI_BASE_URL=" + srv.url, "OPENAI_API_KEY=sk-test-0123456789"}
	ran := false
	for _, r := range agentRunners(t) {
		if r.cred == nil && os.Geteuid() == 0 {
			continue
		}
		ran = true
		t.Run(r.name, func(t *testing.T) {
			home := r.ownDir(t)
			out := filepath.Join(home, "run")
			args := append([]string{"run", "--dataset", "demo", "--model", "openai/gpt-test", "--tasks", "901", "--repeats", "1", "--no-progress", "--out", out},
				r.backends[0]...)
			r.run(t, home, env, args...).wantExit(t, 0)
			results := filepath.Join(out, "results.jsonl")
			before := readFile(t, results)
			if err := os.Chmod(results, 0o444); err != nil {
				t.Fatal(err)
			}
			calls := srv.Requests()
			res := r.run(t, home, env, append(args, "--repeats", "2")...)
			res.wantExit(t, 3)
			textcheck.Has(t, "the last line", lastLine(res.stderr), results, "the run could not write it", "permission denied", "nothing was played")
			if srv.Requests() != calls {
				t.Errorf("%d model calls made", srv.Requests()-calls)
			}
			if after := readFile(t, results); after != before {
				t.Errorf("results.jsonl changed:\n%s", after)
			}
		})
	}
	if !ran && os.Getenv("CI") != "" {
		t.Fatal("no normal user to run as: set AA_GRADE_TEST_USER when the tests run as root")
	}
	if !ran {
		t.Skip("no normal user to run as: set AA_GRADE_TEST_USER when the tests run as root")
	}
}
