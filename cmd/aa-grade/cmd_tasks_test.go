package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/internal/devtools/demogen"
	"github.com/aa-grade/aa-grade/internal/testsupport/taskedit"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// validateReports reads the reports of tasks validate --json, stopping the test unless it
// exited with code and reported n tasks.
func validateReports(t *testing.T, r result, code, n int) []validate.Report {
	t.Helper()
	r.wantExit(t, code)
	var reports []validate.Report
	if err := json.Unmarshal([]byte(r.stdout), &reports); err != nil {
		t.Fatalf("the reports: %v\n%s", err, r.stdout)
	}
	if len(reports) != n {
		t.Fatalf("%d reports, want %d\n%s", len(reports), n, r.stdout)
	}
	return reports
}

func TestTasksSynthValidatePack(t *testing.T) {
	dir := t.TempDir()
	good, broken := filepath.Join(dir, "Scenario-1000"), filepath.Join(dir, "Scenario-1001")
	for _, c := range []struct{ out, fault, seed string }{{good, "flag", "3"}, {broken, "netpol", "4"}} {
		r := aaGrade(t, nil, "tasks", "synth", "--out", c.out, "--fault", c.fault, "--seed", c.seed)
		if r.code != 0 || !strings.Contains(r.stdout, "root cause ") {
			t.Fatalf("synth: exit %d\n%s%s", r.code, r.stdout, r.stderr)
		}
	}
	if err := os.Remove(filepath.Join(broken, "otel_traces_raw.tsv")); err != nil {
		t.Fatal(err)
	}

	r := aaGrade(t, nil, "tasks", "validate", "--json", good, broken)
	reports := validateReports(t, r, 1, 2)
	if reports[0].Task != "Scenario-1000" {
		t.Errorf("report 1 is of %s, want Scenario-1000", reports[0].Task)
	}
	if n := reports[0].Errors(); n != 0 {
		t.Errorf("report 1 has %d errors, want 0", n)
	}
	if n := reports[1].Errors(); n != 1 {
		t.Errorf("report 2 has %d errors, want 1", n)
	} else if code := reports[1].Findings[0].Code; code != validate.CodeMissingFile {
		t.Errorf("report 2's finding is %s, want %s", code, validate.CodeMissingFile)
	}
	if t.Failed() {
		t.Fatalf("reports = %+v", reports)
	}
	if !strings.Contains(r.stderr, "1 task with errors (of 2): Scenario-1001") {
		t.Fatalf("stderr: %s", r.stderr)
	}

	// pack refuses a task that fails validation and writes nothing.
	out := filepath.Join(dir, "dataset")
	if r = aaGrade(t, nil, "tasks", "pack", "--out", out, good, broken); r.code != 1 || !strings.Contains(r.stderr, "nothing packed") {
		t.Fatalf("pack with a broken task: exit %d\n%s", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("pack wrote a dataset although a task failed")
	}
	if r = aaGrade(t, nil, "tasks", "pack", "--out", out, good); r.code != 0 {
		t.Fatalf("pack: exit %d\n%s", r.code, r.stderr)
	}
	if r = aaGrade(t, nil, "tasks", "validate", out); r.code != 0 || !strings.Contains(r.stdout, "Scenario-1000: ok") {
		t.Fatalf("validate the pack: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	subs := t.TempDir()
	testfs.Write(t, filepath.Join(subs, "Scenario-1000", "1.json"), `["otel-demo/ConfigMap/flagd-config"]`)
	if r = aaGrade(t, nil, "grade", "--dataset", out, subs); r.code != 0 || !strings.Contains(r.stdout, "Score 1.000") {
		t.Fatalf("grade the pack: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestTasksValidateDemo(t *testing.T) {
	r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "tasks", "validate", "demo")
	if r.code != 0 || strings.Count(r.stdout, ": ok (0 errors") != len(demogen.Tasks) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestTasksValidateStats gives each task's statistics, as text and as JSON.
func TestTasksValidateStats(t *testing.T) {
	env := []string{"XDG_CACHE_HOME=" + t.TempDir()}
	r := aaGrade(t, env, "tasks", "validate", "--stats", "--json", "demo")
	reports := validateReports(t, r, 0, len(demogen.Tasks))
	for _, rep := range reports {
		st := rep.Stats
		if st == nil {
			t.Errorf("%s: no stats", rep.Task)
			continue
		}
		firstDump := 0
		if len(st.ObjectsPerDump) > 0 {
			firstDump = st.ObjectsPerDump[0]
		}
		for _, c := range []struct {
			what     string
			got, min int
		}{
			{"dumps", st.Dumps, 5}, {"objects in the first dump", firstDump, 200}, {"changed objects", st.ChangedObjects, 10},
			{"early signatures", len(st.EarlySignatures), 1}, {"metrics files", st.MetricsFiles, 16},
		} {
			if c.got < c.min {
				t.Errorf("%s: %d %s, want %d or more", rep.Task, c.got, c.what, c.min)
			}
		}
		if n := st.AlertNames["Watchdog"]; n != st.AlertsFiles-1 {
			t.Errorf("%s: Watchdog fires in %d alerts files, want all but one, %d", rep.Task, n, st.AlertsFiles-1)
		}
	}
	r = aaGrade(t, env, "tasks", "validate", "--stats", "demo")
	if r.code != 0 || strings.Count(r.stdout, "stats   objects: ") != len(demogen.Tasks) {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

func TestTasksUsageErrors(t *testing.T) {
	dir := t.TempDir()
	for name, args := range map[string][]string{
		"validate nothing": {"tasks", "validate"},
		"unknown fault":    {"tasks", "synth", "--out", filepath.Join(dir, "x"), "--fault", "meteor"},
		"bad size":         {"tasks", "synth", "--out", filepath.Join(dir, "x"), "--size", "huge"},
		"synth no out":     {"tasks", "synth"},
		"pack nothing":     {"tasks", "pack", "--out", filepath.Join(dir, "y")},
		"bad split":        {"tasks", "pack", "--out", filepath.Join(dir, "y"), "--split", "secret", dir},
		"missing path":     {"tasks", "validate", filepath.Join(dir, "absent")},
	} {
		t.Run(name, func(t *testing.T) {
			if r := aaGrade(t, nil, args...); r.code != 2 {
				t.Fatalf("exit %d, want 2\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestTasksValidateStripsTerminalSequencesFromTaskIDs: a task folder named with escape
// sequences is reported, on stdout and in the error line, without them.
func TestTasksValidateStripsTerminalSequencesFromTaskIDs(t *testing.T) {
	task := filepath.Join(t.TempDir(), "Scenario-7\x1b]0;pwned\x07\x1b]52;c;aGk=\x1b\\\x1b[2J")
	testfs.Write(t, filepath.Join(task, "ground_truth.yaml"), "groups: []\n")
	r := aaGrade(t, nil, "tasks", "validate", task)
	r.wantExit(t, 1)
	textcheck.Has(t, "stdout", r.stdout, "Scenario-7: FAILED")
	if !textcheck.Has(t, "stderr", r.stderr, "aa-grade: 1 task with errors (of 1): Scenario-7\n") || t.Failed() {
		t.FailNow()
	}

	assertNoTerminalSequences(t, "stdout", r.stdout)
	assertNoTerminalSequences(t, "stderr", r.stderr)
}

// TestJSONOutputEscapesTerminalControls: --json keeps a hostile task id whole, but as escapes:
// encoding/json alone would write the 8-bit CSI (U+009B) and a bidi override as they are.
func TestJSONOutputEscapesTerminalControls(t *testing.T) {
	id := "Scenario-8\u009b2J\u009d0;pwned\u009c\u202eexe\x1b[41m"
	task := filepath.Join(t.TempDir(), id)
	testfs.Write(t, filepath.Join(task, "ground_truth.yaml"), "groups: []\n")
	r := aaGrade(t, nil, "tasks", "validate", "--json", task)
	reports := validateReports(t, r, 1, 1)
	if reports[0].Task != id {
		t.Fatalf("the report is of %s, want %s", reports[0].Task, id)
	}
	for _, raw := range []string{"\x1b", "\u009b", "\u009d", "\u009c", "\u202e"} {
		if strings.Contains(r.stdout, raw) {
			t.Errorf("stdout holds %q as it is:\n%q", raw, r.stdout)
		}
	}
	assertNoTerminalSequences(t, "stderr", r.stderr)
	if !strings.Contains(r.stdout, `Scenario-8\u009b2J\u009d0;pwned\u009c\u202eexe\u001b[41m`) {
		t.Errorf("the task id is not escaped:\n%s", r.stdout)
	}
}

// TestTasksValidateAgainstFindsACopiedTask: a demo task copied under another id, and another
// copied with its services, namespace and pods renamed, moved in time and stripped of a fifth
// of its lines (issue 38), are reported as near-duplicates of the demo's, with what they
// share (in their own names, not the cluster's Watchdog); exit 0, since a duplicate is a
// warning.
func TestTasksValidateAgainstFindsACopiedTask(t *testing.T) {
	held := filepath.Join(t.TempDir(), "Scenario-1903")
	r := aaGrade(t, nil, "tasks", "synth", "--out", held, "--fault", "network-chaos", "--seed", "5")
	if r.code != 0 {
		t.Fatalf("synth: exit %d\n%s", r.code, r.stderr)
	}
	copied := filepath.Join(t.TempDir(), "Scenario-1901")
	if out, err := exec.Command("cp", "-r", demoTaskDir(t, "Scenario-901"), copied).CombinedOutput(); err != nil {
		t.Fatalf("copy: %v %s", err, out)
	}
	src := demoTaskDir(t, "Scenario-902")
	services, err := taskedit.Workloads(src, taskedit.AppNamespace)
	if err != nil {
		t.Fatal(err)
	}
	edited := filepath.Join(t.TempDir(), "Scenario-1902")
	err = taskedit.Copy(src, edited, taskedit.Renamed(services, taskedit.AppNamespace, 1),
		taskedit.Retimed(5*time.Hour+time.Minute), taskedit.Noised(0.2, false, 1))
	if err != nil {
		t.Fatal(err)
	}
	r = aaGrade(t, nil, "tasks", "validate", "--json", "--against", "demo", held, copied, edited)
	reports := validateReports(t, r, 0, 3)
	codes := func(rep validate.Report, code string) []string {
		var out []string
		for _, f := range rep.Findings {
			if f.Code == code {
				out = append(out, f.Message)
			}
		}
		return out
	}
	if dup := codes(reports[1], validate.CodeDuplicate); len(dup) != 1 || !strings.Contains(dup[0], "a near-duplicate of Scenario-901 of demo (similarity 1.00") {
		t.Errorf("the copied task's duplicates: %q", dup)
	}
	dup := codes(reports[2], validate.CodeDuplicate)
	if len(dup) != 1 {
		t.Fatalf("the renamed, moved and stripped copy's duplicates: %q", dup)
	}
	textcheck.Has(t, "the renamed copy's duplicate", dup[0], "a near-duplicate of Scenario-902 of demo (similarity ")
	textcheck.Lacks(t, "the renamed copy's duplicate", dup[0], "Watchdog", "otel-demo", "{svc:")
	if dup := codes(reports[0], validate.CodeDuplicate); len(dup) != 0 {
		t.Errorf("a generated task is a duplicate: %q", dup)
	}
	if near := codes(reports[0], validate.CodeNearest); len(near) != 1 || !strings.Contains(near[0], "the task most like it is ") {
		t.Errorf("the generated task's nearest: %q", near)
	}
}

// demoTaskDir is where the demo's task id is unpacked.
func demoTaskDir(t *testing.T, id string) string {
	t.Helper()
	ds, err := data.Open(t.Context(), "demo", data.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range ds.Tasks {
		if task.ID == id {
			return task.Dir
		}
	}
	t.Fatalf("no %s in the demo", id)
	return ""
}

// TestTasksValidateDifficulty: the naive solvers and builtin/baseline answer a generated task,
// each scored, with the evidence of each entity; the baseline's score is the one a run of it
// gets.
func TestTasksValidateDifficulty(t *testing.T) {
	task := filepath.Join(t.TempDir(), "Scenario-1000")
	if r := aaGrade(t, nil, "tasks", "synth", "--out", task, "--fault", "flag", "--seed", "3"); r.code != 0 {
		t.Fatalf("synth: exit %d\n%s", r.code, r.stderr)
	}
	r := aaGrade(t, nil, "tasks", "validate", "--json", "--difficulty", task)
	reports := validateReports(t, r, 0, 1)

	var solvers []string
	var baseline validate.SolverScore
	for _, s := range reports[0].Difficulty {
		solvers = append(solvers, s.Solver)
		if s.Error != "" {
			t.Errorf("%s failed: %s", s.Solver, s.Error)
		}
		for _, a := range s.Answer {
			if a.Evidence == "" {
				t.Errorf("%s names %s without evidence", s.Solver, a.Entity)
			}
		}
		if s.Solver == "builtin/baseline" {
			baseline = s
		}
	}
	if strings.Join(solvers, ",") != "alert-labels,first-error,dump-diff,builtin/baseline" || len(baseline.Answer) == 0 {
		t.Fatalf("solvers: %v, baseline %+v", solvers, baseline)
	}
	out := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, nil, "run", "--dataset", task, "--model", "builtin/baseline", "--repeats", "1", "--out", out); r.code != 0 ||
		!strings.Contains(r.stdout, fmt.Sprintf("Score %.3f", baseline.Score)) {
		t.Fatalf("a run of the baseline does not score %.3f: exit %d\n%s%s", baseline.Score, r.code, r.stdout, r.stderr)
	}
}

// TestTasksValidateTaskWithoutAnswerKey: a task folder whose ground_truth.yaml is missing is a
// task with an error naming the file (exit 1), not a path that is no dataset (exit 2).
func TestTasksValidateTaskWithoutAnswerKey(t *testing.T) {
	task := filepath.Join(t.TempDir(), "Scenario-1000")
	if r := aaGrade(t, nil, "tasks", "synth", "--out", task, "--seed", "3"); r.code != 0 {
		t.Fatalf("synth: exit %d\n%s", r.code, r.stderr)
	}
	if err := os.Remove(filepath.Join(task, "ground_truth.yaml")); err != nil {
		t.Fatal(err)
	}
	r := aaGrade(t, nil, "tasks", "validate", task)
	if r.code != 1 || !strings.Contains(r.stdout, "error   missing-file    ground_truth.yaml: the answer key ground_truth.yaml is missing") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := aaGrade(t, nil, "tasks", "validate", t.TempDir()); r.code != 2 || !strings.Contains(r.stderr, "not a dataset") {
		t.Fatalf("an empty folder: exit %d\n%s", r.code, r.stderr)
	}
}
