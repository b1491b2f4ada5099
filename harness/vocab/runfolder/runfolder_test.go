package runfolder

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

const header = `{"model": "builtin/baseline", "tasks": ["Scenario-1", "Scenario-2"], "repeats": 2}`

// TestReadResults: the last line of an episode wins, fields of newer versions are ignored, a
// last line cut by a crash is skipped in silence, and any other line that is not a result is
// skipped with a warning naming the file and the line.
func TestReadResults(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, HeaderFile), header)
	testfs.Write(t, filepath.Join(dir, ResultsFile), strings.Join([]string{
		`{"task":"Scenario-1","repeat":1,"status":"error","error":"provider down"}`,
		`{"task":"Scenario-1","repeat":1,"status":"ok","score":0.5,"tp":1,"fp":1,"from_a_newer_version":true}`,
		`garbage`,
		``,
		`{"status":"ok"}`,
		`{"task":"Scenario-2","repeat":1,"status":"max_turns","turns":100}`,
		`{"task":"Scenario-2","repeat":0,"status":"ok"}`,
		`{"task":"Scenario-2","repeat":2,"status":"ok","sco`,
	}, "\n"))
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 2 {
		t.Errorf("%d results, want 2", len(run.Results))
	}
	if s := run.Results[Episode{"Scenario-1", 1}].Score; s != 0.5 {
		t.Errorf("Scenario-1 repeat 1: score %v, want 0.5", s)
	}
	if n := run.Results[Episode{"Scenario-2", 1}].Turns; n != 100 {
		t.Errorf("Scenario-2 repeat 1: %d turns, want 100", n)
	}
	if t.Failed() {
		t.Fatalf("read %+v", run.Results)
	}
	path := filepath.Join(dir, ResultsFile)
	want := []string{path + ":3: skipped, not a result: invalid character", path + ":5: skipped, not a result: no task and repeat",
		path + ":7: skipped, not a result: no task and repeat"}
	if len(run.Warnings) != len(want) {
		t.Fatalf("warnings %q, want %d", run.Warnings, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(run.Warnings[i], w) {
			t.Errorf("warning %q, want %q...", run.Warnings[i], w)
		}
	}
}

// TestReadResultsLongLines: a line too long to be a result is skipped with a warning without
// being held whole, and the lines after it still read; a last line with no newline that is a
// result is one.
func TestReadResultsLongLines(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, HeaderFile), header)
	long := `{"task":"Scenario-1","repeat":1,"error":"` + strings.Repeat("x", 2*maxResultLine) + `"}`
	testfs.Write(t, filepath.Join(dir, ResultsFile), long+"\n"+`{"task":"Scenario-2","repeat":1,"status":"ok"}`)
	run, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(run.Results) != 1 || run.Results[Episode{"Scenario-2", 1}].Status != "ok" {
		t.Errorf("results %+v, want Scenario-2's alone, ok", run.Results)
	}
	if len(run.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", run.Warnings)
	}
	if !textcheck.Has(t, "the warning", run.Warnings[0], fmt.Sprintf(":1: skipped, not a result: longer than %d bytes", maxResultLine)) || t.Failed() {
		t.FailNow()
	}
}

func TestReadHeader(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	testfs.Write(t, file, "x")
	good := filepath.Join(dir, "good")
	testfs.Write(t, filepath.Join(good, HeaderFile), `{"model": "builtin/baseline", "repeats": 2, "tasks": ["Scenario-1"], "prices": {"input": 3}}`)
	cut := filepath.Join(dir, "cut")
	testfs.Write(t, filepath.Join(cut, HeaderFile), `{"model": `)
	noModel := filepath.Join(dir, "no-model")
	testfs.Write(t, filepath.Join(noModel, HeaderFile), `{"tasks": ["Scenario-1"]}`)
	folderHeader := filepath.Join(dir, "folder-header")
	testfs.Write(t, filepath.Join(folderHeader, HeaderFile, "x"), "")

	h, err := ReadHeader(good)
	if err != nil {
		t.Fatal(err)
	}
	if h.Model != "builtin/baseline" {
		t.Errorf("model %s, want builtin/baseline", h.Model)
	}
	if h.Repeats != 2 {
		t.Errorf("%d repeats, want 2", h.Repeats)
	}
	if len(h.Tasks) != 1 {
		t.Errorf("tasks %v, want one", h.Tasks)
	}
	if h.Prices.Input != 3 {
		t.Errorf("input price %v, want 3", h.Prices.Input)
	}
	if t.Failed() {
		t.Fatalf("%+v", h)
	}
	for _, c := range []struct {
		dir, names string
		want       error
	}{
		{filepath.Join(dir, "absent"), filepath.Join(dir, "absent"), ErrNotRunFolder},
		{file, file, ErrNotRunFolder},
		{dir, dir, ErrNotRunFolder},
		{cut, filepath.Join(cut, HeaderFile), ErrCorrupt},
		{noModel, filepath.Join(noModel, HeaderFile), ErrCorrupt},
		{folderHeader, folderHeader, ErrCorrupt},
	} {
		if _, err := ReadHeader(c.dir); !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.names) {
			t.Errorf("ReadHeader(%s) = %v, want %v naming %s", c.dir, err, c.want, c.names)
		}
	}
}

// TestOpenRefusesFoldersThatAreNotRuns: someone's files are never written into (nothing is
// created there, not even the lock), a file is refused, and an empty folder or one holding
// only the lock file of a run that died before writing run.json opens as a new run.
func TestOpenRefusesFoldersThatAreNotRuns(t *testing.T) {
	mine := t.TempDir()
	testfs.Write(t, filepath.Join(mine, "report.md"), "my notes")
	if _, err := Open(mine); !errors.Is(err, ErrNotRunFolder) || !strings.Contains(err.Error(), "report.md") {
		t.Fatalf("a folder of someone's files: %v", err)
	}
	if entries, _ := os.ReadDir(mine); len(entries) != 1 {
		t.Fatalf("wrote into someone's folder: %v", entries)
	}
	file := filepath.Join(t.TempDir(), "file")
	testfs.Write(t, file, "x")
	if _, err := Open(file); !errors.Is(err, ErrNotRunFolder) {
		t.Fatalf("a file: %v", err)
	}
	leftover := t.TempDir()
	testfs.Write(t, filepath.Join(leftover, LockFile), `{"pid": 1}`)
	for _, dir := range []string{t.TempDir(), leftover, filepath.Join(t.TempDir(), "new", "run")} {
		f, err := Open(dir)
		if err != nil || f.Prev != nil {
			t.Fatalf("%s: %v, %+v", dir, err, f)
		}
		f.Close()
	}
}

// TestOpenLocks: a folder open for a run cannot be opened again until it is closed; the
// refusal names the holder.
func TestOpenLocks(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := os.Hostname()
	_, err = Open(dir)
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), fmt.Sprintf("pid %d on %s, started ", os.Getpid(), host)) {
		t.Fatalf("second open: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	again, err := Open(dir)
	if err != nil {
		t.Fatalf("after Close: %v", err)
	}
	again.Close()
}

// TestCloseLeavesNothingOfARunThatNeverBegan: a new run that wrote no header (its sandbox
// could not start) leaves no lock file, and no folder when Open made it; one that wrote its
// header keeps both.
func TestCloseLeavesNothingOfARunThatNeverBegan(t *testing.T) {
	made := filepath.Join(t.TempDir(), "made")
	given := t.TempDir()
	for _, dir := range []string{made, given} {
		f, err := Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(made); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a folder Open made for a run that never began is still there: %v", err)
	}
	if entries, err := os.ReadDir(given); err != nil || len(entries) != 0 {
		t.Errorf("a folder given for a run that never began: %v, %v", entries, err)
	}
	f, err := Open(made)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.WriteHeader(Header{Model: "builtin/baseline"}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := ReadHeader(made); err != nil {
		t.Fatalf("a run that began: %v", err)
	}
	if _, err := os.Stat(filepath.Join(made, LockFile)); err != nil {
		t.Fatalf("its lock file: %v", err)
	}
}

// TestOpenRepairsTheLastLine: before a resume appends, a last line cut by a crash is dropped
// and a whole result missing its newline gets one, so every line appended stands alone.
func TestOpenRepairsTheLastLine(t *testing.T) {
	whole := `{"task":"Scenario-1","repeat":1,"status":"ok","score":1}`
	for name, c := range map[string]struct{ file, want string }{
		"cut":        {whole + "\n" + `{"task":"Scenario-1","rep`, whole + "\n"},
		"no newline": {whole, whole + "\n"},
		"whole":      {whole + "\n", whole + "\n"},
		"no results": {"", ""},
	} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			testfs.Write(t, filepath.Join(dir, HeaderFile), header)
			if c.file != "" {
				testfs.Write(t, filepath.Join(dir, ResultsFile), c.file)
			}
			f, err := Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, _ := os.ReadFile(filepath.Join(dir, ResultsFile))
			if string(b) != c.want {
				t.Fatalf("results.jsonl after Open: %q, want %q", b, c.want)
			}
			if err := f.Append(Result{Task: "Scenario-2", Repeat: 1, Status: "ok"}); err != nil {
				t.Fatal(err)
			}
			run, err := Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(run.Warnings) != 0 {
				t.Errorf("warnings %q, want none", run.Warnings)
			}
			if s := run.Results[Episode{"Scenario-2", 1}].Status; s != "ok" {
				t.Errorf("Scenario-2 repeat 1: status %q, want ok", s)
			}
			if t.Failed() {
				t.Fatalf("%+v", run)
			}
		})
	}
}

// TestAppendReportsAFullDevice: a result written to a device that is always full (/dev/full)
// is an error naming the file, not a silent loss.
func TestAppendReportsAFullDevice(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := os.Symlink("/dev/full", filepath.Join(dir, ResultsFile)); err != nil {
		t.Fatal(err)
	}
	err = f.Append(Result{Task: "Scenario-1", Repeat: 1, Status: "ok"})
	if err == nil {
		t.Fatal("an append to a full device did not fail")
	}
	if !textcheck.Has(t, "the error of an append to a full device", err.Error(), "no space left on device", ResultsFile) {
		t.FailNow()
	}

}

// TestDifferencesOfTheEnvironment: a resume into another image or other package versions is
// another experiment; a run recorded before the environment was is not refused for it.
func TestDifferencesOfTheEnvironment(t *testing.T) {
	base := Header{Model: "m", Sandbox: "bwrap", Python: map[string]string{"pandas": "1.5.3", "numpy": "1.24.2"}}
	image := base
	image.Image, image.ImageDigest = "image.tar", "sha256:abc"
	newer := base
	newer.Python = map[string]string{"pandas": "3.0.3", "numpy": "1.24.2"}
	old := Header{Model: "m", Sandbox: "bwrap"} // written before environments were recorded
	for _, c := range []struct {
		name string
		a, b Header
		want string
	}{
		{"same", base, base, ""},
		{"into an image", base, image, "image_digest was none, now sha256:abc"},
		{"other packages", base, newer, "python was map[numpy:1.24.2 pandas:1.5.3], now map[numpy:1.24.2 pandas:3.0.3]"},
		{"unrecorded", old, image, ""},
	} {
		if got := strings.Join(c.a.Differences(c.b), "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestDifferencesOfARepairedRun: a field aa-grade repair could not know is named unknown in a
// refusal while it is unset, not the zero value it reads as; once written in, its value.
func TestDifferencesOfARepairedRun(t *testing.T) {
	repaired := Header{Model: "m", Unknown: []string{"max_turns", "loop", "command_timeout", "sandbox"}}
	resumed := Header{Model: "m", Settings: settings.Settings{MaxTurns: 100, Loop: settings.LoopReference,
		CommandTimeout: settings.Duration(5 * time.Minute)}, Sandbox: "bwrap"}
	edited := repaired
	edited.MaxTurns = 50
	for _, c := range []struct {
		name string
		a, b Header
		want string
	}{
		{"the rebuilt run resumed", repaired, resumed, "loop was unknown, now reference; max_turns was unknown, now 100; " +
			"command_timeout was unknown, now 5m0s; sandbox was unknown, now bwrap"},
		{"merged the other way", resumed, repaired, "loop was reference, now unknown; max_turns was 100, now unknown; " +
			"command_timeout was 5m0s, now unknown; sandbox was bwrap, now unknown"},
		{"a field written in since", edited, resumed, "loop was unknown, now reference; max_turns was 50, now 100; " +
			"command_timeout was unknown, now 5m0s; sandbox was unknown, now bwrap"},
	} {
		if got := strings.Join(c.a.Differences(c.b), "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}

	// Unknown is not the zero value: a resume with none is refused too, until run.json says
	// what it was (the name taken out of unknown).
	noEffort := Header{Model: "m", Unknown: []string{"reasoning_effort", "judge"}}
	if got := strings.Join(noEffort.Differences(Header{Model: "m"}), "; "); got !=
		"reasoning_effort was unknown, now none; judge was unknown, now none" {
		t.Errorf("an unknown field resumed with its zero value: %q", got)
	}
	noEffort.Unknown = nil
	if got := noEffort.Differences(Header{Model: "m"}); len(got) > 0 {
		t.Errorf("fields no longer unknown: %q", got)
	}
}

// TestResumeDifferences: a resume may grow a run, by more repeats or by tasks beside all of
// its own, when nothing else changes; fewer repeats, a task left out, any other change, and
// any growth of a shard's run are refused, naming the field. A merge grows nothing.
func TestResumeDifferences(t *testing.T) {
	base := Header{Model: "m", Tasks: []string{"a", "b"}, Repeats: 3, Settings: settings.Settings{MaxTurns: 100}}
	with := func(change func(*Header)) Header {
		h := base
		h.Tasks = slices.Clone(base.Tasks)
		change(&h)
		return h
	}
	shard := with(func(h *Header) { h.Shard = "1/2" })
	topP := 0.9
	for _, c := range []struct {
		name string
		a, b Header
		want string
	}{
		{"more repeats", base, with(func(h *Header) { h.Repeats = 5 }), ""},
		{"more tasks", base, with(func(h *Header) { h.Tasks = []string{"0", "a", "b", "c"} }), ""},
		{"both", base, with(func(h *Header) { h.Tasks, h.Repeats = []string{"a", "b", "c"}, 4 }), ""},
		{"fewer repeats", base, with(func(h *Header) { h.Repeats = 2 }), "repeats was 3, now 2"},
		{"a task left out", base, with(func(h *Header) { h.Tasks = []string{"a", "c"} }), "tasks was [a b], now [a c]"},
		{"growth and another change", base, with(func(h *Header) { h.Repeats, h.MaxTurns = 5, 50 }), "max_turns was 100, now 50"},
		{"a shard's", shard, with(func(h *Header) { h.Shard, h.Repeats = "1/2", 5 }), "repeats was 3, now 5"},
		{"the model's parameters", base, with(func(h *Header) { h.Params.TopP = &topP }), "model_params was none, now top_p=0.9"},
	} {
		if got := strings.Join(c.a.ResumeDifferences(c.b), "; "); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
	if got := base.Differences(with(func(h *Header) { h.Repeats = 5 })); len(got) != 1 {
		t.Errorf("a merge of runs with other repeats: %q", got)
	}
}

// TestRecordRateLimits: the rate limits the run's limiter knew at its end and what its calls
// met go into run.json, the header otherwise as it was; a folder with no header yet is an
// error that says what failed.
func TestRecordRateLimits(t *testing.T) {
	f, err := Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := ratelimit.Status{Limits: []ratelimit.InForce{{Name: "tokens", Given: 300000, Learnt: 200000}, {Name: "requests", Learnt: 500}},
		Calls: 12, RateLimited: 1, WaitedSeconds: 3.5, Warnings: []string{"rate limits: an answer states no rate limits"}}
	if err := f.RecordRateLimits(s); err == nil || !strings.Contains(err.Error(), "record the rate limits") {
		t.Fatalf("no header yet: %v", err)
	}
	if err := f.WriteHeader(Header{Model: "openai/m", Repeats: 3}); err != nil {
		t.Fatal(err)
	}
	if err := f.RecordRateLimits(s); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(f.Dir, HeaderFile))
	want := `"rate_limits": {
    "limits": [
      {
        "name": "tokens",
        "given": 300000,
        "learnt": 200000
      },
      {
        "name": "requests",
        "learnt": 500
      }
    ],
    "calls": 12,
    "rate_limited": 1,
    "waited_s": 3.5,
    "warnings": [
      "rate limits: an answer states no rate limits"
    ]
  }`
	if !strings.Contains(string(b), want) || !strings.Contains(string(b), `"repeats": 3`) {
		t.Fatalf("run.json:\n%s\nwant it to hold:\n%s", b, want)
	}
}
