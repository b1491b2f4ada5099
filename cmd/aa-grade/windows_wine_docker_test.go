//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/testsupport/dockerproxy"
)

// TestWindowsBuildRunsDockerUnderWine: aa-grade.exe under Wine plays the demo's episodes in
// docker, the daemon reached over TCP (DOCKER_HOST=tcp://127.0.0.1:PORT, a proxy of its
// socket that the test starts, as Docker Desktop's TCP port or a remote daemon is reached)
// with aa-grade-linux-amd64 beside it as the guest, to the same results as the Linux build's
// run of the same tasks. Killed once its first episode's result is written, then resumed, the
// run loses nothing: that result is kept as it was, the other episodes are played once (every
// trajectory compressed, as on Linux), and what the killed run left in the daemon (its volume
// and the container that filled it, a stopped container) is gone once the resumed run ends,
// though Wine gives the resumed run the killed one's pid. It found three defects, fixed: on
// Windows an owner tag's start time was "0", so that the resumed run took the killed run's
// volumes for its own and filled ones that held another task's files (a score changed); Linux
// aa-grade processes sharing the daemon removed the Wine run's containers as those of a dead
// run (its Windows pid read as a Linux one); and no trajectory was compressed (Windows
// removes no open file).
func TestWindowsBuildRunsDockerUnderWine(t *testing.T) {
	w := wineForTest(t)
	img := dockerImage(t)
	if err := exec.Command("docker", "image", "inspect", img).Run(); err != nil {
		t.Skipf("no docker here for this user, or no image %s: %v", img, err)
	}
	linuxGuest := filepath.Join(filepath.Dir(w.exe), "aa-grade-linux-amd64")
	if err := os.Link(binary, linuxGuest); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	env := []string{"DOCKER_HOST=" + dockerproxy.Start(t)}
	dir := t.TempDir()
	run := func(out string) []string {
		return []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--sandbox", "docker",
			"--sandbox-image", img, "--tasks", "901,902,903", "--repeats", "1", "--parallel", "1", "--out", out}
	}
	linux := filepath.Join(dir, "linux")
	aaGrade(t, nil, run(linux)...).wantExit(t, 0)

	// Under Wine, killed after its first episode.
	wrun := filepath.Join(dir, "wine")
	cmd := w.aaGradeCommand(t, env, run(winPath(wrun))...)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = io.Discard, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	results := filepath.Join(wrun, "results.jsonl")
	var first string
	for deadline := time.Now().Add(10 * time.Minute); first == "" && time.Now().Before(deadline); {
		select {
		case err := <-exited:
			t.Fatalf("the run under Wine ended (%v) before it was killed:\n%s", err, stderr.String())
		case <-time.After(100 * time.Millisecond):
		}
		if b, _ := os.ReadFile(results); bytes.Count(b, []byte("\n")) > 0 {
			first = string(b[:bytes.IndexByte(b, '\n')])
		}
	}
	if first == "" {
		t.Fatalf("no episode ended under Wine in 10 minutes:\n%s", stderr.String())
	}
	killedOwner := lockOwner(t, wrun)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	killedLeft := dockerObjects(t, "aa-grade-"+killedOwner)
	if len(killedLeft) == 0 {
		t.Errorf("the killed run left nothing in the daemon (aa-grade-%s...): its volumes at least", killedOwner)
	}
	if n := len(resultsOf(t, wrun)); n >= 3 {
		t.Fatalf("the run under Wine had played %d episodes when it was killed: nothing left to resume", n)
	}
	r := w.aaGrade(t, env, run(winPath(wrun))...)
	r.wantExit(t, 0)
	lines := resultsOf(t, wrun)
	if len(lines) == 0 || lines[0] != first {
		t.Errorf("resumed under Wine, results.jsonl starts %q, want the line written before the kill, %q", lines, first)
	}
	if got, want := withoutTimes(t, lines), withoutTimes(t, resultsOf(t, linux)); !slices.Equal(got, want) {
		t.Errorf("results under Wine, killed and resumed:\n%s\non Linux:\n%s", strings.Join(got, "\n"),
			strings.Join(want, "\n"))
	}
	// The same files in each episode's folder (each trajectory compressed, none left plain).
	if got, want := fileNames(t, filepath.Join(wrun, "episodes")), fileNames(t, filepath.Join(linux, "episodes")); !slices.Equal(got, want) {
		t.Errorf("the episodes' files under Wine: %q, on Linux: %q", got, want)
	}
	// Under Wine the resumed run often has the killed one's pid: its start time tells them apart.
	for _, name := range dockerObjects(t, "aa-grade-"+killedOwner) {
		if slices.Contains(killedLeft, name) {
			t.Errorf("%s, left by the killed run, is still there after the resumed run", name)
		}
	}
}

// dockerObjects are the containers and volumes whose names start with prefix.
func dockerObjects(t *testing.T, prefix string) []string {
	t.Helper()
	var names []string
	for _, list := range [][]string{{"ps", "-a", "--format", "{{.Names}}"}, {"volume", "ls", "--format", "{{.Name}}"}} {
		out, err := exec.Command("docker", list...).Output()
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range strings.Fields(string(out)) {
			if strings.HasPrefix(name, prefix) {
				names = append(names, name)
			}
		}
	}
	return names
}

// lockOwner is the start of the owner tag (PID-) of the aa-grade process that holds the run
// folder dir's lock, with which it names its containers and volumes.
func lockOwner(t *testing.T, dir string) string {
	t.Helper()
	var lock struct{ PID int }
	b, err := os.ReadFile(filepath.Join(dir, "run.lock"))
	if err == nil {
		err = json.Unmarshal(b, &lock)
	}
	if err != nil || lock.PID == 0 {
		t.Fatalf("run.lock: %q %v", b, err)
	}
	return strconv.Itoa(lock.PID) + "-"
}

// resultsOf are the lines of a run folder's results.jsonl.
func resultsOf(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// fileNames are the paths of the files under dir, sorted.
func fileNames(t *testing.T, dir string) []string {
	t.Helper()
	names := slices.Sorted(maps.Keys(readTree(t, dir)))
	if len(names) == 0 {
		t.Fatalf("no file under %s", dir)
	}
	return names
}

// withoutTimes are results without what differs from run to run (how long each part took),
// sorted by task and repeat.
func withoutTimes(t *testing.T, lines []string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		var r map[string]any
		if err := json.Unmarshal([]byte(l), &r); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		delete(r, "duration_s")
		delete(r, "model_s")
		delete(r, "tool_s")
		b, _ := json.Marshal(r)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}
