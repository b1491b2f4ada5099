package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// flagSources lists, for every environment variable a flag of cmd or its sub-commands reads,
// the flags reading it as "command --flag".
func flagSources(cmd *cli.Command, path string, into map[string][]string) {
	for _, f := range cmd.Flags {
		var chain *cli.ValueSourceChain
		switch f := f.(type) {
		case *cli.StringFlag:
			chain = &f.Sources
		case *cli.IntFlag:
			chain = &f.Sources
		case *cli.BoolFlag:
			chain = &f.Sources
		case *cli.DurationFlag:
			chain = &f.Sources
		case *cli.FloatFlag:
			chain = &f.Sources
		case *cli.StringSliceFlag:
			chain = &f.Sources
		case *cli.Uint64Flag:
			chain = &f.Sources
		case *cli.GenericFlag:
			chain = &f.Sources
		default:
			panic("flagSources: add the flag type " + f.Names()[0])
		}
		for _, key := range chain.EnvKeys() {
			into[key] = append(into[key], strings.TrimSpace(path+" --"+f.Names()[0]))
		}
	}
	for _, sub := range cmd.Commands {
		flagSources(sub, strings.TrimSpace(path+" "+sub.Name), into)
	}
}

// TestEnvironmentTable: the commands read exactly the variables of the environment table,
// each for the flags the table names (so AA_GRADE_OUT steers run alone, and each meaning of
// parallelism has its variable), and docs/cli.md shows the table as it is.
func TestEnvironmentTable(t *testing.T) {
	read := map[string][]string{}
	flagSources(newApp(nil, nil), "", read)
	names := map[string]bool{}
	for _, v := range environment {
		if names[v.name] {
			t.Errorf("%s is twice in the table", v.name)
		}
		names[v.name] = true
		got, want := read[v.name], slices.Clone(v.flags)
		sort.Strings(got)
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s is read by %q; the table says %q", v.name, got, want)
		}
	}
	for key, flags := range read {
		if !names[key] {
			t.Errorf("%s (read by %q) is not in the environment table", key, flags)
		}
	}
	doc, err := os.ReadFile(filepath.Join(moduleRoot, "docs", "cli.md"))
	if err != nil {
		t.Fatal(err)
	}
	const begin, end = "<!-- environment table: go test ./cmd/aa-grade -update rewrites it -->\n", "<!-- end of the environment table -->\n"
	head, rest, ok1 := strings.Cut(string(doc), begin)
	_, tail, ok2 := strings.Cut(rest, end)
	if !ok1 || !ok2 {
		t.Fatalf("docs/cli.md lacks the markers of the environment table")
	}
	want := head + begin + environmentMarkdown() + end + tail
	if golden.Update() {
		if err := os.WriteFile(filepath.Join(moduleRoot, "docs", "cli.md"), []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	} else if string(doc) != want {
		t.Errorf("docs/cli.md shows another environment table than the code's (go test ./cmd/aa-grade -update rewrites it)")
	}
}

// TestOutOnlySteersRun: AA_GRADE_OUT set for run does not choose where tasks synth writes.
func TestOutOnlySteersRun(t *testing.T) {
	mine := t.TempDir()
	testfs.Write(t, filepath.Join(mine, "report.md"), "mine")
	r := aaGrade(t, []string{"AA_GRADE_OUT=" + mine}, "tasks", "synth")
	if r.code != 2 || r.stderr != "aa-grade: --out is required; see aa-grade tasks synth --help\n" {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
}

// TestHelpTexts: the top-level help has every exit code; --dataset names demo; grade
// --repeats shows one default; the Hub-only commands offer only Hub datasets.
func TestHelpTexts(t *testing.T) {
	top := aaGrade(t, nil, "--help").stdout
	if !strings.Contains(top, "0 success, 1 bad result, 2 usage error, 3 infrastructure failure, 130 interrupted") || strings.Contains(top, "Global flags") {
		t.Errorf("top-level help:\n%s", top)
	}
	if h := aaGrade(t, nil, "run", "--help").stdout; !strings.Contains(h, "demo (built in, offline)") {
		t.Errorf("run --help: --dataset does not name demo:\n%s", h)
	}
	if h := aaGrade(t, nil, "grade", "--help").stdout; strings.Count(helpLine(h, "--repeats"), "default:") != 1 {
		t.Errorf("grade --help: --repeats: %q", helpLine(h, "--repeats"))
	}
	for _, cmd := range []string{"pull", "verify"} {
		if l := helpLine(aaGrade(t, nil, "data", cmd, "--help").stdout, "--dataset"); strings.Contains(l, "folder") || !strings.Contains(l, "hf:OWNER/NAME[@REV]") {
			t.Errorf("data %s --help: --dataset: %q", cmd, l)
		}
	}
}

// helpLine is the line of a help text that documents flag.
func helpLine(help, flag string) string {
	for _, l := range strings.Split(help, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), flag+" ") {
			return l
		}
	}
	return ""
}

// TestGradeNotesWithoutAReason: an episode that hit the turn cap is noted by its status
// alone, not followed by an empty reason; counts of one are singular.
func TestGradeNotesWithoutAReason(t *testing.T) {
	run := t.TempDir()
	testfs.Write(t, filepath.Join(run, runfolder.HeaderFile),
		`{"model": "builtin/baseline", "dataset": "testdata/grade/dataset", "tasks": ["Scenario-901"], "repeats": 1}`)
	testfs.Write(t, filepath.Join(run, runfolder.ResultsFile), `{"task":"Scenario-901","repeat":1,"status":"max_turns","turns":100}`+"\n")
	r := aaGrade(t, nil, "grade", run)
	r.wantExit(t, 0)
	textcheck.Has(t, "stdout", r.stdout, "\nScenario-901 repeat 1 max_turns\n", "over 1 task x 1 repeat = 1 episode; ")
}

// TestOneTurnIsSingular: the line of a finished episode says "1 turn".
func TestOneTurnIsSingular(t *testing.T) {
	var out bytes.Buffer
	p := newRunProgress(&out, true)
	p.tell(runner.Planned{Total: 1})
	p.tell(runner.EpisodeFinished{Result: runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Turns: 1}})
	if !strings.Contains(out.String(), "Scenario-1 repeat 1: ok, score 0.00, 1 turn, cost unknown") {
		t.Errorf("%q", out.String())
	}
}
