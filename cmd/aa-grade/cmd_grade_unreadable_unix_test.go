//go:build linux

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/internal/copytree"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestGradeUnreadableSubmission: a submission the grader may not read is the grader's
// failure, not the agent's: exit 3 naming the file, and no score (not `invalid`). As root,
// which reads anything, the command runs as nobody.
func TestGradeUnreadableSubmission(t *testing.T) {
	dir := t.TempDir()
	subs := filepath.Join(dir, "subs")
	if err := copytree.Copy(filepath.Join(moduleRoot, "testdata", "grade", "submissions"), subs); err != nil {
		t.Fatal(err)
	}
	locked := filepath.Join(subs, "Scenario-901", "2.json")
	if _, err := os.Stat(locked); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(locked, 0); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(binary, "grade", "--dataset", "testdata/grade/dataset", subs)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "HF_HUB_CACHE="+t.TempDir(), "HF_ENDPOINT=http://127.0.0.1:9")
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the submissions: copy the binary beside them and
		// open the folders on the way.
		self := filepath.Join(dir, "aa-grade")
		b, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(self, b, 0o755); err != nil {
			t.Fatal(err)
		}
		// Only the test's own folders: t.TempDir's and the one testing made for the test.
		for _, p := range []string{subs, dir, filepath.Dir(dir)} {
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.Path = self
		cmd.Env = append(cmd.Env, "HOME=/nonexistent")
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3\n%s%s", err, stdout.String(), stderr.String())
	}
	textcheck.Has(t, "stderr", stderr.String(), "aa-grade: cannot read the submission "+locked+": ", "permission denied")
	if !textcheck.Lacks(t, "stdout", stdout.String(), "invalid") || t.Failed() {
		t.FailNow()
	}
}
