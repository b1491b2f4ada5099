package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/copytree"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// binary is the aa-grade executable built once for all CLI tests.
var binary string

// moduleRoot is where the CLI tests run, so paths in outputs are stable.
var moduleRoot string

func TestMain(m *testing.M) {
	flag.Parse()
	dir, err := os.MkdirTemp("", "aa-grade-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "aa-grade")
	_, file, _, _ := runtime.Caller(0)
	moduleRoot = filepath.Join(filepath.Dir(file), "..", "..")
	// Static, as make build and the releases are: the docker sandbox runs it in any image.
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic("build aa-grade: " + err.Error())
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// lastLine is the last line of a command's stderr.
func lastLine(stderr string) string {
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	return lines[len(lines)-1]
}

type result struct {
	stdout, stderr string
	code           int
}

// wantExit stops the test when r exited with another code than want, showing what it printed.
func (r result) wantExit(t *testing.T, want int) {
	t.Helper()
	if r.code != want {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}

// checkExit reports, as an error of t, an exit code other than want, showing what r printed;
// it says whether the code is want.
func (r result) checkExit(t *testing.T, want int) bool {
	t.Helper()
	if r.code != want {
		t.Errorf("exit %d, want %d\n%s%s", r.code, want, r.stdout, r.stderr)
		return false
	}
	return true
}

// wantErrorLine stops the test unless r exited with code and printed one line of error,
// "aa-grade: ...".
func (r result) wantErrorLine(t *testing.T, code int) {
	t.Helper()
	r.wantExit(t, code)
	if !strings.HasPrefix(r.stderr, "aa-grade: ") {
		t.Errorf("stderr does not start with aa-grade: ")
	}
	if strings.Count(r.stderr, "\n") != 1 || !strings.HasSuffix(r.stderr, "\n") {
		t.Errorf("stderr is not one line")
	}
	if t.Failed() {
		t.Fatalf("stderr:\n%s", r.stderr)
	}
}

// testKey is the provider key of the tests' runs against a fake provider.
const testKey = "sk-test-0123456789"

// fakeOpenAI is a fake OpenAI chat provider on 127.0.0.1 playing a script.
type fakeOpenAI struct {
	*fakemodel.Server        // what it was sent
	url               string // its base URL
	env               []string
}

// fakeProvider starts a fake OpenAI chat provider playing script for the rest of the test,
// with env, the environment that points aa-grade at it: a cache of the test's own, the
// provider's URL, and key.
func fakeProvider(t *testing.T, script fakemodel.Script, key string) fakeOpenAI {
	t.Helper()
	fake := &fakemodel.Server{Script: script}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return fakeOpenAI{fake, srv.URL, []string{"XDG_CACHE_HOME=" + t.TempDir(), "OPENAI_BASE_URL=" + srv.URL, "OPENAI_API_KEY=" + key}}
}

// wantErrorLineWith stops the test unless r exited with code and printed one line of error
// that starts with prefix (which starts "aa-grade: ") and holds each of pieces.
func (r result) wantErrorLineWith(t *testing.T, code int, prefix string, pieces ...string) {
	t.Helper()
	r.wantErrorLine(t, code)
	if !strings.HasPrefix(r.stderr, prefix) {
		t.Errorf("stderr does not start with %q", prefix)
	}
	if !textcheck.Has(t, "stderr", r.stderr, pieces...) || t.Failed() {
		t.FailNow()
	}
}

// aaGrade runs the real binary from the module root with extra environment variables.
func aaGrade(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = moduleRoot
	// Never the real Hub: an empty cache, and an endpoint nothing listens on.
	cmd.Env = append(os.Environ(), "HF_HUB_CACHE="+t.TempDir(), "HF_ENDPOINT=http://127.0.0.1:9", "HF_TOKEN=")
	cmd.Env = append(cmd.Env, env...)
	return runBinary(t, cmd)
}

// runBinary runs cmd to its end: what it printed and its exit code.
func runBinary(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{stdout.String(), stderr.String(), code}
}

func TestHelpAndUsageErrors(t *testing.T) {
	r := aaGrade(t, nil, "--help")
	r.wantExit(t, 0)
	if !textcheck.Has(t, "--help", r.stdout, "grade", "Exit codes") {
		t.FailNow()
	}
	for name, args := range map[string][]string{
		"unknown command":    {"frobnicate"},
		"unknown flag":       {"grade", "--bogus", "x"},
		"no submissions":     {"grade", "--dataset", "testdata/grade/dataset"},
		"two submissions":    {"grade", "--dataset", "testdata/grade/dataset", "a", "b"},
		"bad repeats":        {"grade", "--dataset", "testdata/grade/dataset", "--repeats", "-1", "testdata/grade/submissions"},
		"missing dataset":    {"grade", "--dataset", "testdata/absent", "testdata/grade/submissions"},
		"missing folder":     {"grade", "--dataset", "testdata/grade/dataset", "testdata/absent"},
		"not a dataset":      {"grade", "--dataset", "README.md", "testdata/grade/submissions"},
		"repeats not an int": {"grade", "--repeats", "three", "--dataset", "testdata/grade/dataset", "testdata/grade/submissions"},
	} {
		t.Run(name, func(t *testing.T) {
			aaGrade(t, nil, args...).wantErrorLine(t, 2)
		})
	}
}

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
// others are still graded, and the exit code says the result is bad.
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
	r := aaGrade(t, nil, "grade", "--dataset", dataset, subs)
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

// assertNoTerminalSequences fails when out holds an escape sequence, a BEL, an 8-bit CSI, a
// bidi override or the payload of the hostile sequences the tests plant ("pwned", "aGk=").
func assertNoTerminalSequences(t *testing.T, what, out string) {
	t.Helper()
	for _, bad := range []string{"\x1b", "\x07", "\u009b", "\u202e", "pwned", "aGk="} {
		if strings.Contains(out, bad) {
			t.Errorf("%s holds %q:\n%q", what, bad, out)
		}
	}
}

// TestErrorLineStripsTerminalSequences: an error quoting a model reply and a task id is still
// one line on stderr, without the escape sequences in them.
func TestErrorLineStripsTerminalSequences(t *testing.T) {
	var stderr bytes.Buffer
	err := badResult(fmt.Errorf("episode %s: %w", "Scenario-1\x1b]0;pwned\x07",
		errors.New("the model replied:\n\x1b[2J\x1b]52;c;aGk=\x1b\\\xc2\x9b2Jdone \u202eexe")))
	if code := exitCode(err, &stderr); code != 1 || stderr.String() != "aa-grade: episode Scenario-1: the model replied: done exe\n" {
		t.Errorf("exit %d, stderr %q", code, stderr.String())
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
	r := aaGrade(t, nil, "grade", "--dataset", dataset, subs)
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

// TestVersion: --version prints the build's version (a module version, or devel with the
// revision), not a usage error.
func TestVersion(t *testing.T) {
	r := aaGrade(t, nil, "--version")
	r.wantExit(t, 0)
	if !strings.HasPrefix(r.stdout, "aa-grade version ") {
		t.Errorf("--version printed %q, want aa-grade version ...", r.stdout)
	}
	textcheck.Lacks(t, "--version", r.stdout, "version dev\n")

}
