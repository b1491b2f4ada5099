package main

import (
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
)

// TestDemoRunOutput: what `aa-grade run --dataset demo --model builtin/baseline` prints, on
// stdout and stderr, as testdata/demo-run.txt has it (demoRunOutput says what is normalised).
func TestDemoRunOutput(t *testing.T) {
	out := filepath.Join(t.TempDir(), "run")
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline", "--out", out)
	if r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	golden.Check(t, filepath.Join("testdata", "demo-run.txt"), demoRunOutput(r, out))
}

// sandboxBackend and sandboxWarning find what a run prints of this machine's sandbox: its backend, and its
// warnings (how it differs from the reference one, the limits it cannot enforce here).
var (
	sandboxBackend = regexp.MustCompile(`in the [a-z]+ sandbox`)
	sandboxWarning = regexp.MustCompile(`^warning: the ([a-z]+ )?sandbox `)
)

// demoRunOutput is what a run printed, the same on every machine and at every run: the run
// folder's path is RUN_DIR, the sandbox's backend BACKEND, the lines of finished episodes are
// sorted (they come as the episodes end), and the lines that depend on the machine or the
// clock are left out (the sandbox's warnings, the periodic progress line).
func demoRunOutput(r result, out string) string {
	var kept, episodes []string
	stderr := sandboxBackend.ReplaceAllString(strings.ReplaceAll(r.stderr, out, "RUN_DIR"), "in the BACKEND sandbox")
	for line := range strings.Lines(stderr) {
		switch {
		case sandboxWarning.MatchString(line), strings.HasPrefix(line, "progress: "):
		case strings.HasPrefix(line, "Scenario-"):
			episodes = append(episodes, line)
		default:
			kept = append(kept, line)
		}
	}
	slices.Sort(episodes)
	return "--- stdout\n" + strings.ReplaceAll(r.stdout, out, "RUN_DIR") +
		"--- stderr\n" + strings.Join(kept, "") + strings.Join(episodes, "")
}
