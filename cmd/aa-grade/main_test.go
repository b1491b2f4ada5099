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
	"runtime"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// binary is the aa-grade executable built once for all CLI tests.
var binary string

// moduleRoot is where the CLI tests run, so paths in outputs are stable.
var moduleRoot string

// TestMain builds the binary the CLI tests run; the script tests' exits program is this test
// binary under that name (testscript.Main runs it when called so).
func TestMain(m *testing.M) {
	testscript.Main(withBinary{m}, map[string]func(){"exits": exitsMain})
}

// withBinary runs the tests with the aa-grade binary built, and removes it after them.
type withBinary struct{ m *testing.M }

// afterTests are what the tests started for all of them (Wine's server), to stop once they
// are over, before the binary's folder goes.
var afterTests []func()

// Run builds the binary from this folder, statically, then runs the tests.
func (w withBinary) Run() int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "aa-grade-cli")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	defer func() {
		for _, f := range afterTests {
			f()
		}
	}()
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
	return w.m.Run()
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

// TestOutputWriteErrorEndsTheCommand: a command whose results cannot be written (stdout on a
// full disk) ends with that error and exit 3, instead of silently.
func TestOutputWriteErrorEndsTheCommand(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full here: %v", err)
	}
	defer full.Close()
	var stderr bytes.Buffer
	cmd := exec.Command(binary, "models")
	cmd.Stdout, cmd.Stderr = full, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitFailure {
		t.Fatalf("aa-grade models > /dev/full: %v, want exit %d", err, exitFailure)
	}
	textcheck.Has(t, "stderr", stderr.String(), "aa-grade: write the output: ", "no space left on device")
}

// readFile is the file's text.
func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
