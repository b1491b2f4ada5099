//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
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

// TestShardsMergeToTheWhole: shards 1/2 and 2/2 merged give the results of the whole run;
// merging one shard alone reports the missing episodes; runs of another configuration are
// refused.
func TestShardsMergeToTheWhole(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901,902,903", "2")
	dir := t.TempDir()
	for _, r := range [][]string{
		s.command(filepath.Join(dir, "whole")),
		s.command(filepath.Join(dir, "one"), "--shard", "1/2"),
		s.command(filepath.Join(dir, "two"), "--shard", "2/2"),
		s.command(filepath.Join(dir, "other"), "--shard", "2/2", "--max-turns", "50"),
	} {
		if res := aaGrade(t, s.env, r...); res.code != 0 {
			t.Fatalf("%v: exit %d\n%s", r, res.code, res.stderr)
		}
	}
	if n := lines(t, filepath.Join(dir, "one", "results.jsonl")); n != 3 {
		t.Fatalf("shard 1/2 ran %d episodes, want 3", n)
	}
	r := aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "merged"), filepath.Join(dir, "one"), filepath.Join(dir, "two"))
	if r.code != 0 || !strings.Contains(r.stdout, "Score 0.167") {
		t.Fatalf("merge: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if a, b := episodeFields(t, filepath.Join(dir, "whole")), episodeFields(t, filepath.Join(dir, "merged")); a != b {
		t.Fatalf("merged shards differ from the whole run:\n%s\n---\n%s", a, b)
	}
	for _, name := range []string{"results.parquet", runfolder.PromptsFile} {
		if _, err := os.Stat(filepath.Join(dir, "merged", name)); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "merged", "episodes", "Scenario-902", "2", "trajectory.jsonl.zst")); err != nil {
		t.Fatal(err)
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "half"), filepath.Join(dir, "one"))
	r.wantExit(t, 1)
	if !textcheck.Has(t, "the merge of one shard", r.stderr, "3 of 6 episodes are not finished", "Scenario-901/2") {
		t.FailNow()
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "twice"), filepath.Join(dir, "whole"), filepath.Join(dir, "two"))
	r.wantExit(t, 0)
	if n := strings.Count(r.stderr, "was finished by more than one run"); n != 3 {
		t.Errorf("merge with episodes twice: %d episodes said finished twice, want 3:\n%s", n, r.stderr)
	}
	if !textcheck.Has(t, "the merge's stdout", r.stdout, "Score 0.167") || t.Failed() {
		t.FailNow()
	}
	var twice []string // in task and repeat order, whatever order the runs finished them in
	for _, line := range strings.Split(r.stderr, "\n") {
		if strings.Contains(line, "was finished by more than one run") {
			twice = append(twice, line)
		}
	}
	if !slices.IsSorted(twice) {
		t.Errorf("the episodes finished twice are not in order: %q", twice)
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "self"), filepath.Join(dir, "one"), filepath.Join(dir, "one")+"/")
	r.wantExit(t, 2)
	textcheck.Has(t, "the merge of a folder with itself", r.stderr, "are the same run folder")
	if !textcheck.Lacks(t, "the merge of a folder with itself", r.stderr, "more than one run") || t.Failed() {
		t.FailNow()
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "mixed"), filepath.Join(dir, "one"), filepath.Join(dir, "other"))
	if r.code != 2 || !strings.Contains(r.stderr, "max_turns was 100, now 50") {
		t.Fatalf("merge of two configurations: exit %d\n%s", r.code, r.stderr)
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "nothing"), filepath.Join(dir, "one"), filepath.Join(dir, "no-such-run"))
	if r.code != 2 || !strings.Contains(r.stderr, "no-such-run: not a run folder") {
		t.Fatalf("merge of a folder that is not a run: exit %d\n%s", r.code, r.stderr)
	}
	r = aaGrade(t, nil, "merge", "--out", filepath.Join(dir, "whole"), filepath.Join(dir, "one"))
	if r.code != 2 || !strings.Contains(r.stderr, "already holds a run") {
		t.Fatalf("merge into a run folder: exit %d\n%s", r.code, r.stderr)
	}
}

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

// TestInterruptRecordsUnfinished sends Ctrl-C (SIGINT) to a run of slow episodes: it starts
// no more, records the running ones as unfinished after the grace, says how to resume and
// exits 130; the resumed run finishes them.
func TestInterruptRecordsUnfinished(t *testing.T) {
	s := newScriptedRun(t, fakemodel.Script{Turns: 100, Command: "sleep 0.2", Answer: answer901}, "901,902,903", "1")
	out := filepath.Join(t.TempDir(), "run")
	cmd, stderr := start(t, s.env, s.command(out, "--grace", "500ms")...)
	waitFor(t, func() bool {
		_, err := os.Stat(filepath.Join(out, "episodes", "Scenario-902", "1", "trajectory.jsonl"))
		return err == nil
	})
	cmd.Process.Signal(syscall.SIGINT)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("exit %v, want 130\n%s", err, stderr.String())
	}
	if !textcheck.Has(t, "stderr", stderr.String(), "to resume, run the same command again") {
		t.FailNow()
	}
	for _, want := range []string{"interrupted: no more episodes start; finishing 2 running episodes for up to 500ms (until ",
		"press Ctrl-C again to stop them at once", "the grace of 500ms is over: stopping 2 running episodes now"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("missing %q in\n%s", want, stderr.String())
		}
	}
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if got := strings.Count(string(results), `"status":"unfinished"`); got != 2 {
		t.Errorf("%d episodes recorded unfinished, want the two running", got)
	}
	if n := lines(t, filepath.Join(out, "results.jsonl")); n != 2 {
		t.Errorf("%d results, want 2", n)
	}
	if t.Failed() {
		t.Fatalf("results.jsonl:\n%s", results)
	}
	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "| unfinished | 2 |") {
		t.Fatalf("the reports of the interrupted run: %v\n%s", err, md)
	}
	fast := newScriptedRun(t, fakemodel.Script{Turns: 3, Command: "ls", Answer: answer901}, "901,902,903", "1")
	r := aaGrade(t, fast.env, s.command(out, "--grace", "500ms")...) // the same flags; only the server changed

	r.wantExit(t, 0)
	if n := lines(t, filepath.Join(out, "results.jsonl")); n != 5 {
		t.Errorf("resume after Ctrl-C: %d results, want 5", n)
	}
	if !textcheck.Has(t, "the resume's stdout", r.stdout, "Score 0.167") || t.Failed() {
		t.FailNow()
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

// TestGrowAFinishedRun: run --out RUN with more repeats and more tasks than the finished run
// it holds plays only the new episodes (the first ones' lines and trajectories are left as
// they were), records the grown configuration in run.json and reports on every episode; fewer
// repeats, a task left out, or growth with any other change is refused, naming the field.
func TestGrowAFinishedRun(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	out := filepath.Join(t.TempDir(), "run")
	run := func(extra ...string) result {
		return aaGrade(t, env, append([]string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--parallel", "2", "--out", out}, extra...)...)
	}
	if r := run("--tasks", "901,902", "--repeats", "2"); r.code != 0 {
		t.Fatalf("the first run: exit %d\n%s", r.code, r.stderr)
	}
	firstResults, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	trajectory := filepath.Join(out, "episodes", "Scenario-901", "1", "trajectory.jsonl.zst")
	firstTrajectory, err := os.ReadFile(trajectory)
	if err != nil {
		t.Fatal(err)
	}
	r := run("--tasks", "901,902,903", "--repeats", "3")
	if r.code != 0 || !strings.Contains(r.stderr, "resuming: 4 of 9 episodes already finished") {
		t.Fatalf("the grown run: exit %d\n%s", r.code, r.stderr)
	}
	results, _ := os.ReadFile(filepath.Join(out, "results.jsonl"))
	if !bytes.HasPrefix(results, firstResults) || lines(t, filepath.Join(out, "results.jsonl")) != 9 {
		t.Fatalf("want the 4 first lines as they were and 5 more:\n%s", results)
	}
	if again, _ := os.ReadFile(trajectory); !bytes.Equal(again, firstTrajectory) {
		t.Error("Scenario-901 repeat 1 was played again")
	}
	h, err := runfolder.ReadHeader(out)
	if err != nil {
		t.Fatal(err)
	}
	if h.Repeats != 3 {
		t.Errorf("run.json after growing: %d repeats, want 3", h.Repeats)
	}
	if want := []string{"Scenario-901", "Scenario-902", "Scenario-903"}; !slices.Equal(h.Tasks, want) {
		t.Errorf("run.json after growing: tasks %v, want %v", h.Tasks, want)
	}
	var summary struct{ Tasks, Repeats, Episodes int }
	b, err := os.ReadFile(filepath.Join(out, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &summary); err != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if summary.Episodes != 9 {
		t.Errorf("summary.json after growing: %d episodes, want 9", summary.Episodes)
	}
	if summary.Tasks != 3 {
		t.Errorf("summary.json after growing: %d tasks, want 3", summary.Tasks)
	}
	if t.Failed() {
		t.FailNow()
	}

	if md, err := os.ReadFile(filepath.Join(out, "report.md")); err != nil || !strings.Contains(string(md), "Scenario-903") {
		t.Fatalf("report.md leaves out the new task: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--tasks", "901,902,903", "--repeats", "2"}, "repeats was 3, now 2"},
		{[]string{"--tasks", "901,903", "--repeats", "3"}, "tasks was [Scenario-901 Scenario-902 Scenario-903], now [Scenario-901 Scenario-903]"},
		{[]string{"--tasks", "901,902,903", "--repeats", "4", "--max-turns", "50"}, "(max_turns was 100, now 50)"},
	} {
		if r := run(c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%v: exit %d, want a refusal naming %q\n%s", c.args, r.code, c.want, r.stderr)
		}
	}
	if now, _ := os.ReadFile(filepath.Join(out, "results.jsonl")); !bytes.Equal(now, results) {
		t.Error("a refused resume changed results.jsonl")
	}
}
