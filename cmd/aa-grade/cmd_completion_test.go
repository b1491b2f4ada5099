package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestShellCompletion: completion prints a script for bash, zsh and fish (bash parses the
// bash one), the scripts ask aa-grade for the words, which lists the commands and a
// command's flags; an unknown shell is a usage error.
func TestShellCompletion(t *testing.T) {
	for _, shell := range []string{"bash", "zsh", "fish"} {
		r := aaGrade(t, nil, "completion", shell)
		r.wantExit(t, 0)
		if !textcheck.Has(t, "completion "+shell, r.stdout, "aa-grade", "--generate-shell-completion") {
			t.FailNow()
		}
		if shell == "bash" {
			script := filepath.Join(t.TempDir(), "aa-grade.bash")
			if err := os.WriteFile(script, []byte(r.stdout), 0o600); err != nil {
				t.Fatal(err)
			}
			if out, err := exec.Command("bash", "-n", script).CombinedOutput(); err != nil {
				t.Fatalf("bash -n: %v\n%s", err, out)
			}
		}
	}
	if r := aaGrade(t, nil, "--generate-shell-completion"); !strings.HasPrefix(r.stdout, "run:") || !strings.Contains(r.stdout, "\ncompletion:") {
		t.Fatalf("commands: exit %d\n%s", r.code, r.stdout)
	}
	if r := aaGrade(t, nil, "run", "--mo", "--generate-shell-completion"); !strings.HasPrefix(r.stdout, "--model:") {
		t.Fatalf("run's flags: exit %d\n%s", r.code, r.stdout)
	}
	oneErrorLine(t, aaGrade(t, nil, "completion", "tcsh"), `no command "tcsh"; see aa-grade completion --help`)
}
