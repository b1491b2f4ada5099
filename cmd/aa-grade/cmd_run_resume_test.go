//go:build linux

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// scriptedRun is a run of a scripted model behind the OpenAI protocol over demo tasks.
type scriptedRun struct {
	fake *fakemodel.Server // the provider, and what it was sent
	env  []string
	args []string // everything but --out
}

// newScriptedRun is the run of tasks x repeats of the demo dataset, two episodes at once, as
// openai/fake, against a fake provider playing script (fakeProvider, with testKey).
func newScriptedRun(t *testing.T, script fakemodel.Script, tasks string, repeats string) scriptedRun {
	t.Helper()
	p := fakeProvider(t, script, testKey)
	return scriptedRun{
		fake: p.Server,
		env:  p.env,
		args: []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", tasks, "--repeats", repeats, "--parallel", "2"},
	}
}

func (s scriptedRun) command(out string, extra ...string) []string {
	return append(append(append([]string(nil), s.args...), "--out", out), extra...)
}

var answer901 = []string{"otel-demo/ConfigMap/flagd-config", "otel-demo/Service/frontend"}

// TestKillNineThenResume kills a run with SIGKILL while episodes are running, resumes it, and
// compares with an uninterrupted run: one result per episode, the same results. Once with a
// scripted model server, once with builtin/baseline.
func TestKillNineThenResume(t *testing.T) {
	scripted := newScriptedRun(t, fakemodel.Script{Turns: 6, Command: "sleep 0.05; ls", Answer: answer901}, "901,902,903,904", "2")
	baseline := scriptedRun{env: []string{"XDG_CACHE_HOME=" + t.TempDir()},
		args: []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,902,903,904", "--repeats", "2", "--parallel", "2"}}
	for name, s := range map[string]scriptedRun{"scripted": scripted, "baseline": baseline} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			whole, killed := filepath.Join(dir, "whole"), filepath.Join(dir, "killed")
			if r := aaGrade(t, s.env, s.command(whole)...); r.code != 0 {
				t.Fatalf("uninterrupted run: exit %d\n%s", r.code, r.stderr)
			}
			cmd, _ := start(t, s.env, s.command(killed)...)
			waitFor(t, func() bool { return lines(t, filepath.Join(killed, "results.jsonl")) >= 2 })
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // the whole process group, as a crash or OOM kill would
			cmd.Wait()
			before := lines(t, filepath.Join(killed, "results.jsonl"))
			if before >= 8 {
				t.Skip("the run finished before it could be killed")
			}
			r := aaGrade(t, s.env, s.command(killed)...)
			if r.code != 0 || !strings.Contains(r.stderr, "already finished") {
				t.Fatalf("resume: exit %d\n%s", r.code, r.stderr)
			}
			if n := lines(t, filepath.Join(killed, "results.jsonl")); n != 8 {
				t.Fatalf("%d result lines after the resume, want exactly one per episode (8); %d before", n, before)
			}
			if a, b := episodeFields(t, whole), episodeFields(t, killed); a != b {
				t.Fatalf("the resumed run differs from the uninterrupted one:\n%s\n---\n%s", a, b)
			}
		})
	}
}

// start runs the binary in its own process group without waiting for it.
func start(t *testing.T, env []string, args ...string) (*exec.Cmd, *bytes.Buffer) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = moduleRoot
	cmd.Env = append(append(os.Environ(), "HF_HUB_CACHE="+t.TempDir(), "HF_ENDPOINT=http://127.0.0.1:9", "HF_TOKEN="), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	return cmd, &stderr
}

// waitFor polls cond for up to a minute.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("timed out waiting")
}

// lines counts the lines of a file (0 when it does not exist).
func lines(t *testing.T, path string) int {
	t.Helper()
	b, _ := os.ReadFile(path)
	return bytes.Count(b, []byte("\n"))
}
