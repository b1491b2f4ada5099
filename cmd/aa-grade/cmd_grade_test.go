package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/copytree"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestGradeHubOfflineWithoutCache: offline, a dataset never pulled is one line saying so, and
// which command gets it.
func TestGradeHubOfflineWithoutCache(t *testing.T) {
	r := aaGrade(t, []string{"HF_HUB_OFFLINE=1"}, "grade", "testdata/grade/submissions")
	want := regexp.MustCompile(`^aa-grade: offline \(HF_HUB_OFFLINE is set\): hf:ArtificialAnalysis/ITBench-AA@main was never pulled into \S+; run aa-grade data pull with the network\n$`)
	if r.code != 3 || !want.MatchString(r.stderr) {
		t.Fatalf("exit %d:\n%s", r.code, r.stderr)
	}
}

func TestGradeSample(t *testing.T) {
	r := aaGrade(t, nil, "grade", "--dataset", "testdata/grade/dataset", "testdata/grade/submissions")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	golden.Check(t, "testdata/grade-sample.txt", r.stdout)

	j := aaGrade(t, nil, "grade", "--json", "--dataset", "testdata/grade/dataset", "testdata/grade/submissions")
	if j.code != 0 {
		t.Fatalf("--json: exit %d: %s", j.code, j.stderr)
	}
	golden.Check(t, "testdata/grade-sample.json", j.stdout)
}

func TestGradeEnvironmentVariables(t *testing.T) {
	r := aaGrade(t, []string{"AA_GRADE_DATASET=testdata/grade/dataset", "AA_GRADE_REPEATS=2", "AA_GRADE_JSON=true"},
		"grade", "testdata/grade/submissions")
	r.wantExit(t, 0)
	textcheck.Has(t, "stdout", r.stdout, `"repeats": 2`, `"episodes": 8`)
}

// TestGradeBrokenTask: a task whose ground truth is broken is reported with its id, the
// others are still graded, and the exit code says the result is bad (over every task of the
// dataset: by default only the one the answers cover would be graded).
func TestGradeBrokenTask(t *testing.T) {
	dataset := t.TempDir()
	for task, gt := range map[string]string{
		"Scenario-1": "groups:\n  - {id: a, kind: Pod, filter: [a-.*], root_cause: true}\n",
		"Scenario-2": "groups:\n  - {id: a, kind: Pod, filter: [a-.*]}\n",
		"Scenario-3": "groups:\n  - {id: a, kind: Pod, filter: [a], root_cause: true}\naliases: [[a, nope]]\n",
	} {
		testfs.Write(t, filepath.Join(dataset, task, "ground_truth.yaml"), gt)
	}
	subs := t.TempDir()
	testfs.Write(t, filepath.Join(subs, "Scenario-1", "1.json"), `["ns/Pod/a-1"]`)
	testfs.Write(t, filepath.Join(subs, "Scenario-8", "1.json"), `[]`)
	r := aaGrade(t, nil, "grade", "--all-tasks", "--dataset", dataset, subs)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		"error: ground truth of Scenario-2: invalid ground truth: no group has root_cause: true",
		`error: ground truth of Scenario-3: invalid ground truth: alias names unknown group id "nope"`,
		"warning: submissions for Scenario-8 ignored",
		"aa-grade: 2 tasks could not be graded",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	if !strings.Contains(r.stdout, "Scenario-1  1.00  1.000") || !strings.Contains(r.stdout, "over 1 task x 1 repeat") {
		t.Errorf("the good task must still be graded:\n%s", r.stdout)
	}
}

// TestGradeStripsTerminalSequencesFromTaskIDs: task ids from a hostile dataset reach the
// problem lines, the table, the notes and the error line of grade without their escape
// sequences.
func TestGradeStripsTerminalSequencesFromTaskIDs(t *testing.T) {
	broken, invalid := "Scenario-1\x1b]0;pwned\x07\x1b[2J", "Scenario-2\x1b]52;c;aGk=\x1b\\\x1b[41m"
	dataset := t.TempDir()
	testfs.Write(t, filepath.Join(dataset, broken, "ground_truth.yaml"), "groups:\n  - {id: a, kind: Pod, filter: [a-.*]}\n")
	testfs.Write(t, filepath.Join(dataset, invalid, "ground_truth.yaml"), "groups:\n  - {id: a, kind: Pod, filter: [a-.*], root_cause: true}\n")
	subs := t.TempDir()
	testfs.Write(t, filepath.Join(subs, invalid, "1.json"), `{"entities": 1}`)
	r := aaGrade(t, nil, "grade", "--all-tasks", "--dataset", dataset, subs)
	if r.code != 1 {
		t.Fatalf("exit %d, want 1\n%s", r.code, r.stderr)
	}
	assertNoTerminalSequences(t, "stdout", r.stdout)
	assertNoTerminalSequences(t, "stderr", r.stderr)
	for _, want := range []string{"error: ground truth of Scenario-1: invalid ground truth", "aa-grade: 1 task could not be graded"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, r.stderr)
		}
	}
	for _, want := range []string{"Scenario-2  invalid  0.000", "Scenario-2 repeat 1 invalid: "} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

// TestGradeWarnsOfGlobFilters: Scenario-38's real ground truth has two HPA root causes filtered
// `*.*`, which is no regular expression; grade reads them as globs and says so on stderr, in
// one warning naming the task, however many repeats are graded.
func TestGradeWarnsOfGlobFilters(t *testing.T) {
	gt, err := os.ReadFile(filepath.Join(shareddata.Dir(t), "ground-truth", "itbench-github", "scenario_38.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dataset, subs := t.TempDir(), t.TempDir()
	testfs.Write(t, filepath.Join(dataset, "Scenario-38", "ground_truth.yaml"), string(gt))
	answer := `["otel-demo/hpa/accounting", "otel-demo/hpa/ad"]`
	testfs.Write(t, filepath.Join(subs, "Scenario-38", "1.json"), answer)
	testfs.Write(t, filepath.Join(subs, "Scenario-38", "2.json"), answer)
	r := aaGrade(t, nil, "grade", "--dataset", dataset, subs)
	if r.code != 0 || !strings.Contains(r.stdout, "Scenario-38  1.00  1.00  1.000") {
		t.Fatalf("exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	warnings := strings.Count(r.stderr, "warning: ")
	if warnings != 1 {
		t.Errorf("%d warnings, want 1", warnings)
	}
	if n := strings.Count(r.stderr, `filter "*.*"`); n != 2 {
		t.Errorf("%d glob filters named, want both", n)
	}
	if !textcheck.Has(t, "stderr", r.stderr, "warning: ground truth of Scenario-38: ", "read as a shell glob") || t.Failed() {
		t.FailNow()
	}
}

// TestGradeSkipsImplausibleRepeats: a stray file numbered far beyond any real run's repeats
// is ignored with a warning naming it, instead of making grade score that many repeats of
// every task; --repeats beyond the bound is a usage error.
func TestGradeSkipsImplausibleRepeats(t *testing.T) {
	subs := t.TempDir()
	if err := copytree.Copy(filepath.Join(moduleRoot, "testdata", "grade", "submissions"), subs); err != nil {
		t.Fatal(err)
	}
	testfs.Write(t, filepath.Join(subs, "Scenario-904", "5000.json"), `["otel-demo/Service/frontend"]`)
	r := aaGrade(t, nil, "grade", "--dataset", "testdata/grade/dataset", subs)
	r.wantExit(t, 0)
	textcheck.Has(t, "stdout", r.stdout, "over 4 tasks x 3 repeats")
	if !textcheck.Has(t, "stderr", r.stderr, "warning: ignored "+filepath.Join("Scenario-904", "5000.json")+": repeat 5000 is above 1000") || t.Failed() {
		t.FailNow()
	}
	if r := aaGrade(t, nil, "grade", "--dataset", "testdata/grade/dataset", "--repeats", "5000", subs); r.code != 2 {
		t.Fatalf("--repeats 5000: exit %d\n%s", r.code, r.stderr)
	}
}

// TestGradeOnlyReadsARunFolder grades a run folder whose episodes all failed before making
// their folders: the recorded statuses are graded, and nothing is created in the folder.
func TestGradeOnlyReadsARunFolder(t *testing.T) {
	run := t.TempDir()
	testfs.Write(t, filepath.Join(run, "run.json"),
		`{"model": "builtin/baseline", "dataset": "testdata/grade/dataset", "tasks": ["Scenario-901"], "repeats": 1}`)
	testfs.Write(t, filepath.Join(run, "results.jsonl"), `{"task":"Scenario-901","repeat":1,"status":"error","error":"the sandbox did not start"}`+"\n")
	before, _ := os.ReadDir(run)
	r := aaGrade(t, nil, "grade", run)
	if r.code != 0 || !strings.Contains(r.stdout, "Scenario-901  error") {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after, _ := os.ReadDir(run); len(after) != len(before) {
		t.Fatalf("grade wrote into its input: %v, was %v", after, before)
	}
}
