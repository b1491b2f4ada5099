//go:build linux

package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestRunLocksItsFolder: while a run writes a folder, a second run given the same folder is
// refused (exit 2) before it plays anything, naming the first by pid, host and start time;
// once the first is killed with SIGKILL the lock is gone and the folder resumes.
func TestRunLocksItsFolder(t *testing.T) {
	slow := newScriptedRun(t, fakemodel.Script{Turns: 100, Command: "sleep 0.2", Answer: answer901}, "901", "1")
	out := filepath.Join(t.TempDir(), "run")
	first, _ := start(t, slow.env, slow.command(out)...)
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(out, "episodes", "Scenario-901", "1", "trajectory.jsonl"))
		return err == nil
	})
	header, _ := os.ReadFile(filepath.Join(out, "run.json"))
	host, _ := os.Hostname()
	r := aaGrade(t, slow.env, slow.command(out)...)
	want := fmt.Sprintf("%s: in use by another aa-grade process (pid %d on %s, started ", out, first.Process.Pid, host)
	r.wantExit(t, 2)
	if !strings.HasPrefix(lastLine(r.stderr), "aa-grade: "+want) {
		t.Errorf("a second run into the folder: the error line is %q, want it to start %q", lastLine(r.stderr), "aa-grade: "+want)
	}
	if !textcheck.Lacks(t, "the second run's stderr", r.stderr, "running 1 task") || t.Failed() {
		t.FailNow()
	}
	if now, _ := os.ReadFile(filepath.Join(out, "run.json")); string(now) != string(header) {
		t.Fatalf("the refused run rewrote run.json:\n%s", now)
	}
	syscall.Kill(-first.Process.Pid, syscall.SIGKILL)
	first.Wait()
	fast := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901", "1")
	aaGrade(t, fast.env, slow.command(out)...).wantExit(t, 0)
	if n := lines(t, filepath.Join(out, "results.jsonl")); n != 1 {
		t.Fatalf("resume after the first run was killed: %d results, want 1", n)
	}
}

// TestRunRefusesAFolderThatIsNotARun: --out naming a folder of someone's files, or a file, is
// refused (exit 2) and nothing in it changes; an empty folder, or one a run left with only its
// lock file, is a new run.
func TestRunRefusesAFolderThatIsNotARun(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	run := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901", "--repeats", "1", "--out"}
	mine := t.TempDir()
	files := map[string]string{"report.md": "# my notes\n", "results.jsonl": `{"unrelated": true}` + "\n"}
	for name, content := range files {
		testfs.Write(t, filepath.Join(mine, name), content)
	}
	r := aaGrade(t, env, append(run, mine)...)
	if r.code != 2 || !strings.Contains(lastLine(r.stderr), mine+": not a run folder (no run.json) and not empty (report.md, results.jsonl)") {
		t.Fatalf("a folder of someone's files: exit %d\n%s", r.code, r.stderr)
	}
	entries, _ := os.ReadDir(mine)
	for name, content := range files {
		if b, _ := os.ReadFile(filepath.Join(mine, name)); string(b) != content {
			t.Errorf("%s changed: %q", name, b)
		}
	}
	if len(entries) != len(files) {
		t.Errorf("files added to the folder: %v", entries)
	}
	file := filepath.Join(t.TempDir(), "file")
	testfs.Write(t, file, "x")
	if r := aaGrade(t, env, append(run, file)...); r.code != 2 || !strings.Contains(r.stderr, "--out "+file+": it is a file, not a folder") {
		t.Fatalf("a file: exit %d\n%s", r.code, r.stderr)
	}
	leftover := t.TempDir()
	testfs.Write(t, filepath.Join(leftover, "run.lock"), `{"pid":12345,"host":"gone","started":"2026-01-01T00:00:00Z"}`)
	for _, dir := range []string{t.TempDir(), leftover} {
		if r := aaGrade(t, env, append(run, dir)...); r.code != 0 {
			t.Fatalf("%s: exit %d\n%s", dir, r.code, r.stderr)
		}
	}
}

// smallDisk mounts a tmpfs of the given size for the test: a real file system that fills
// up. Mounting needs root, which CI has; elsewhere the test is skipped.
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := t.TempDir()
	err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size))
	if err != nil && os.Getenv("CI") == "" {
		t.Skipf("cannot mount a small file system (needs root): %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Unmount(dir, syscall.MNT_DETACH) })
	return dir
}

// fillDisk writes a file into dir until the file system is full, and returns its path.
func fillDisk(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 1<<20)
	for {
		if _, err := f.Write(block); errors.Is(err, syscall.ENOSPC) {
			return path
		} else if err != nil {
			t.Fatal(err)
		}
	}
}

// TestRunStopsWhenTheDiskIsFull fills the disk of a run folder between two results: the
// result that cannot be written stops the run (exit 3, naming results.jsonl) with the lines
// before it whole and no episode started after it. A resume while the disk is still full
// fails without touching run.json (replaced whole or not at all); once there is room, it
// plays the rest.
func TestRunStopsWhenTheDiskIsFull(t *testing.T) {
	disk := smallDisk(t, 8<<20)
	// Each episode ends at its first call with a failure long enough (more than the 4 KiB a
	// tmpfs page holds) that its result line needs room of its own: a 503 past a retry time
	// of 1ms, which ends the episode and not the run (a permanent refusal would stop it).
	refusal := strings.Repeat("refused ", 700)
	srv := httptest.NewServer(withModelsList(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.WriteHeader(http.StatusServiceUnavailable)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]string{"message": refusal}})
	}))
	defer srv.Close()
	env := []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=sk-test"}
	out := filepath.Join(disk, "run")
	args := []string{"run", "--dataset", "demo", "--model", "openai/fake", "--tasks", "901,902,903", "--repeats", "1", "--parallel", "1", "--out", out, "--max-retry-time", "1ms"}
	results := filepath.Join(out, "results.jsonl")
	cmd, stderr := start(t, env, args...)
	waitFor(t, func() bool { return lines(t, results) >= 1 })
	filler := fillDisk(t, disk)
	// The episode running when the disk filled fails to write its trajectory or its result,
	// whichever comes first: the run stops, naming the file.
	var ee *exec.ExitError
	if err := cmd.Wait(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("exit %v, want 3\n%s", err, stderr.String())
	}
	textcheck.Has(t, "the last line of stderr", lastLine(stderr.String()), "so the run stopped")
	if !strings.Contains(stderr.String(), results+": no space left on device") && !strings.Contains(stderr.String(), "trajectory.jsonl: no space left on device") {
		t.Errorf("stderr names neither results.jsonl nor a trajectory as what could not be written")
	}
	if t.Failed() {
		t.FailNow()
	}
	before, _ := os.ReadFile(results)
	for line := range strings.Lines(string(before)) {
		var r struct{ Task, Error string }
		if err := json.Unmarshal([]byte(line), &r); err != nil || !(strings.Contains(r.Error, refusal) || strings.Contains(r.Error, "no space left on device")) {
			t.Fatalf("a line of results.jsonl is not whole (%v):\n%.200s", err, line)
		}
	}
	if n := lines(t, results); n < 1 || n > 2 {
		t.Fatalf("%d results recorded, want the one written before the disk filled and at most the one running then", n)
	}
	if _, err := os.Stat(filepath.Join(out, "episodes", "Scenario-903")); err == nil {
		t.Fatal("an episode started after a result could not be recorded")
	}

	header, _ := os.ReadFile(filepath.Join(out, "run.json"))
	r := aaGrade(t, env, args...)
	r.wantExit(t, 3)
	// The check before the first call finds the disk too full for the episodes left, from
	// the size of those in the folder.
	if !textcheck.Has(t, "the error line of a resume on a full disk", lastLine(r.stderr), "disk: the episodes will record about", "too little", "nothing was played") {
		t.FailNow()
	}

	if now, _ := os.ReadFile(filepath.Join(out, "run.json")); len(header) == 0 || string(now) != string(header) {
		t.Fatalf("run.json changed by a write that failed:\n%s\n---\n%s", header, now)
	}
	if now, _ := os.ReadFile(results); string(now) != string(before) {
		t.Fatal("results.jsonl changed by a resume that failed")
	}

	os.Remove(filler)
	fast := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901,902,903", "1")
	if r := aaGrade(t, fast.env, args...); r.code != 0 || !strings.Contains(r.stdout, "over 3 tasks x 1 repeat") {
		t.Fatalf("resume with room on the disk: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestCorruptRunFolder: a run.json that is not a header gets one message naming it and exit 1
// from every command that reads run folders, before any of them does anything else (run
// prints no banner, grade asks no Hub); report reports the other folders given with it.
func TestCorruptRunFolder(t *testing.T) {
	corrupt := t.TempDir()
	testfs.Write(t, filepath.Join(corrupt, "run.json"), `{"model": "openai/gpt-5.5", "tasks": [`)
	want := "aa-grade: corrupt run folder: " + filepath.Join(corrupt, "run.json") +
		": cut short after 38 bytes (unexpected end of JSON input); aa-grade repair " + corrupt +
		" rebuilds run.json from results.jsonl and the trajectories"
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	for name, args := range map[string][]string{
		"run":    {"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901", "--repeats", "1", "--out", corrupt},
		"replay": {"run", "--model", "replay/" + corrupt, "--out", filepath.Join(t.TempDir(), "replayed")},
		"grade":  {"grade", corrupt},
		"report": {"report", corrupt},
		"merge":  {"merge", "--out", filepath.Join(t.TempDir(), "merged"), corrupt},
	} {
		t.Run(name, func(t *testing.T) {
			r := aaGrade(t, env, args...)
			r.wantExit(t, 1)
			if !strings.HasSuffix(strings.TrimSpace(r.stderr), want) {
				t.Errorf("stderr does not end with %q:\n%s", want, r.stderr)
			}
			if !textcheck.Lacks(t, "stderr", r.stderr, "running ") || t.Failed() {
				t.FailNow()
			}
		})
	}
	r := aaGrade(t, nil, "report", "testdata/runs/opus", corrupt, "testdata/runs/qwen")
	r.wantExit(t, 1)
	textcheck.Has(t, "the report", r.stdout, "testdata/runs/opus", "testdata/runs/qwen")
	textcheck.Has(t, "stderr", r.stderr, "warning: skipped corrupt run folder: "+filepath.Join(corrupt, "run.json"))
	if !textcheck.Has(t, "the last line of stderr", lastLine(r.stderr), "1 folder not reported") || t.Failed() {
		t.FailNow()
	}
}

// TestSkippedResultLinesAreNamed: a line of results.jsonl that is not a result (here in the
// middle of the file) is skipped with a warning naming the file and the line, by report,
// grade and a resumed run alike; the lines around it still count.
func TestSkippedResultLinesAreNamed(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	out := filepath.Join(t.TempDir(), "run")
	run := []string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,902", "--repeats", "1", "--out", out}
	r := aaGrade(t, env, run...)
	if r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	// The run's own score line: grading the same lines again must give it back.
	scoreLine := regexp.MustCompile(`Score [0-9.]+ over 2 tasks x 1 repeat = 2 episodes; 95% CI n/a \(fewer than 5 tasks\)`).FindString(r.stdout)
	if scoreLine == "" {
		t.Fatalf("run printed no score over 2 tasks:\n%s", r.stdout)
	}
	path := filepath.Join(out, "results.jsonl")
	b, _ := os.ReadFile(path)
	first, rest, _ := strings.Cut(string(b), "\n")
	testfs.Write(t, path, first+"\n"+"}garbage{\n"+rest)
	want := "warning: " + path + ":2: skipped, not a result: invalid character '}'"
	for name, args := range map[string][]string{
		"report": {"report", out},
		"grade":  {"grade", out},
		"resume": run,
	} {
		r := aaGrade(t, env, args...)
		if r.code != 0 {
			t.Errorf("%s: exit %d, want 0", name, r.code)
		}
		textcheck.Has(t, name+": stderr", r.stderr, want)
		if n := strings.Count(r.stderr, "skipped"); n != 1 {
			t.Errorf("%s: %d warnings of a skipped line, want 1:\n%s", name, n, r.stderr)
		}
		if name != "report" && !strings.Contains(r.stdout, scoreLine) {
			t.Errorf("%s: the lines around the bad one were not read:\n%s", name, r.stdout)
		}
	}
	if lines(t, path) != 3 {
		t.Fatal("the resume ran episodes again")
	}
}

// TestRunStopsWhenATrajectoryCannotBeWritten: an episode whose trajectory cannot be written
// (a full disk; here the file is /dev/full) stops the run with exit 3 naming the file, the
// episode is recorded as an error and runs again on resume.
func TestRunStopsWhenATrajectoryCannotBeWritten(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip(err)
	}
	slow := newScriptedRun(t, fakemodel.Script{Turns: 100, Command: "sleep 0.2", Answer: answer901}, "901,902", "1")
	out := filepath.Join(t.TempDir(), "run")
	cmd, _ := start(t, slow.env, slow.command(out, "--grace", "0s")...)
	trajectory := filepath.Join(out, "episodes", "Scenario-902", "1", "trajectory.jsonl")
	waitFor(t, func() bool { _, err := os.Stat(trajectory); return err == nil })
	cmd.Process.Signal(syscall.SIGINT)
	cmd.Wait()
	os.Remove(trajectory + ".zst") // the interrupted episode's, compressed
	if err := os.Symlink("/dev/full", trajectory); err != nil {
		t.Fatal(err)
	}

	fast := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901,902", "1")
	args := slow.command(out, "--grace", "0s")
	r := aaGrade(t, fast.env, args...)
	r.wantExit(t, 3)
	if !textcheck.Has(t, "stderr", r.stderr, "Scenario-902 repeat 1: ", trajectory+": the trajectory could not be written", "so the run stopped") {
		t.FailNow()
	}
	folder, err := runfolder.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if res := folder.Results[runfolder.Episode{Task: "Scenario-902", Repeat: 1}]; res.Status != grader.StatusError || !strings.Contains(res.Error, "no space left on device") {
		t.Fatalf("the episode is recorded %q: %s", res.Status, res.Error)
	}
	os.Remove(trajectory)
	if r := aaGrade(t, fast.env, args...); r.code != 0 || !strings.Contains(r.stdout, "over 2 tasks x 1 repeat") {
		t.Fatalf("resume with a writable trajectory: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}
