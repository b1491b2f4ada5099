package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// oneErrorLine fails unless r is exit 2 with the single stderr line "aa-grade: " + want.
func oneErrorLine(t *testing.T, r result, want string) {
	t.Helper()
	if r.code != 2 || r.stderr != "aa-grade: "+want+"\n" {
		t.Fatalf("exit %d, want 2 and %q; stderr:\n%s", r.code, "aa-grade: "+want, r.stderr)
	}
}

// TestRunRefusesMeaninglessValues: each value that means nothing is refused before anything
// starts, in one line naming the flag and the value, and no run folder is created (run.json
// would record the value).
func TestRunRefusesMeaninglessValues(t *testing.T) {
	for args, want := range map[string]string{
		"--command-timeout 0s":           "--command-timeout 0s: must be more than 0",
		"--command-timeout -1m":          "--command-timeout -1m0s: must be more than 0",
		"--grace -1s":                    "--grace -1s: must be 0 (stop at once) or more",
		"--max-tokens -5":                "--max-tokens -5: must be 1 or more",
		"--max-tokens 0":                 "--max-tokens 0: must be 1 or more (0, the provider's default, only with --loop lenient)",
		"--context-window 1000":          "--context-window: only with --loop lenient (the reference loop summarises at 70% of --max-tokens)",
		"--loop strict":                  `--loop: unknown loop "strict" (expected reference or lenient)`,
		"--loop lenient --max-tokens -1": "--max-tokens -1: must be 1 or more",
		"--context-window -1":            "--context-window -1: must be 0 (never summarise) or more",
		"--repeats 0":                    "--repeats 0: must be 1 or more",
		"--max-turns 0":                  "--max-turns 0: must be 1 or more",
		"--parallel 0":                   "--parallel 0: must be 1 or more",
		"--max-in-flight -2":             "--max-in-flight -2: must be 0 (as --parallel) or more",
		"--rpm -1":                       "--rpm -1: must be 0 (as the provider states) or more",
		"--shard 3/2":                    `--shard: a shard is I/N with 1 <= I <= N: "3/2"`,
		"--sandbox chroot":               `--sandbox "chroot": must be auto, bwrap, landlock, docker, none`,
		"--judge builtin/baseline":       "--judge builtin/baseline: the judge must be a language model",
		"--limit 0":                      "--limit 0: must be 1 or more",
		"--sample -1":                    "--sample -1: must be 1 or more",
		"--limit 2 --sample 2":           "--limit and --sample: give one (the first N tasks, or a random K)",
		"--seed 4":                       "--seed: only with --sample",
	} {
		t.Run(args, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "run")
			r := aaGrade(t, nil, append([]string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--out", out}, strings.Fields(args)...)...)
			oneErrorLine(t, r, want)
			if _, err := os.Stat(out); err == nil {
				t.Fatal("the run folder was created")
			}
		})
	}
}

// TestUsageErrorsExitTwo: what the command line asks for and cannot be done is exit 2 in
// every command, whatever package finds it: an unknown task on the demo and on a Hub dataset
// alike, an output folder that is not empty, a file where a folder is wanted, a merge onto a
// run.
func TestUsageErrorsExitTwo(t *testing.T) {
	h := fakehub.New()
	defer h.Close()
	h.ServeSample(sampleRepo, fakehub.SampleDataset(2, 1024))
	full, file := t.TempDir(), filepath.Join(t.TempDir(), "file")
	testfs.Write(t, filepath.Join(full, "report.md"), "mine")
	testfs.Write(t, file, "x")
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"unknown task on the demo": {[]string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "999"}, "demo: no such task: 999 (its tasks: 901-912)"},
		"unknown task on the Hub": {[]string{"run", "--model", "builtin/baseline", "--tasks", "999", "--out", filepath.Join(t.TempDir(), "r")},
			"hf:" + sampleRepo + "@main: no such task: Scenario-999 (its tasks: 1-2)"},
		"synth into a folder with files": {[]string{"tasks", "synth", "--out", full}, "--out " + full + ": the folder is not empty; name a new or an empty folder"},
		"synth onto a file":              {[]string{"tasks", "synth", "--out", file}, "--out " + file + ": it is a file, not a folder"},
		"pack into a folder with files":  {[]string{"tasks", "pack", "--out", full, "testdata/grade/dataset"}, "--out " + full + ": the folder is not empty; name a new or an empty folder"},
		"run under a file":               {[]string{"run", "--dataset", "demo", "--model", "builtin/baseline", "--out", filepath.Join(file, "run")}, "--out " + filepath.Join(file, "run") + ": " + file + " is a file, not a folder"},
		"merge onto a file":              {[]string{"merge", "--out", file, "testdata/runs/qwen"}, "--out " + file + ": it is a file, not a folder"},
		"report page onto a folder":      {[]string{"report", "--html", full, "testdata/runs/qwen"}, "--html " + full + ": it is a folder; name the page's file"},
		"doctor of no sandbox":           {[]string{"doctor", "--sandbox", "chroot"}, `--sandbox "chroot": must be auto, bwrap, landlock, docker, none`},
	} {
		t.Run(name, func(t *testing.T) {
			oneErrorLine(t, aaGrade(t, hubEnv(h, t.TempDir()), c.args...), c.want)
		})
	}
	if b, _ := os.ReadFile(filepath.Join(full, "report.md")); string(b) != "mine" {
		t.Fatalf("the user's file was changed: %q", b)
	}
}

// TestDidYouMean: a mistyped command or flag is a usage error suggesting the near one; a word
// like none suggests nothing.
func TestDidYouMean(t *testing.T) {
	for args, want := range map[string]string{
		"grdae x":                `no command "grdae" (did you mean grade?); see aa-grade --help`,
		"data verfy":             `no command "verfy" (did you mean verify?); see aa-grade data --help`,
		"frobnicate":             `no command "frobnicate"; see aa-grade --help`,
		"grade --repaets 2 x":    "unknown flag --repaets (did you mean --repeats?); see aa-grade grade --help",
		"run --modle openai/x":   "unknown flag --modle (did you mean --model?); see aa-grade run --help",
		"run -modle=openai/x":    "unknown flag -modle (did you mean --model?); see aa-grade run --help",
		"grade --wholly-unknown": "unknown flag --wholly-unknown; see aa-grade grade --help",
		"data ls --jsn":          "unknown flag --jsn (did you mean --json?); see aa-grade data ls --help",
	} {
		t.Run(args, func(t *testing.T) { oneErrorLine(t, aaGrade(t, nil, strings.Fields(args)...), want) })
	}
}

// TestBareCommandPrintsItsHelp: aa-grade, or a command group, with nothing after it prints
// exactly what --help prints, and exits 0 as --help does.
func TestBareCommandPrintsItsHelp(t *testing.T) {
	for _, group := range [][]string{nil, {"data"}, {"tasks"}} {
		bare, help := aaGrade(t, nil, group...), aaGrade(t, nil, append(group, "--help")...)
		bare.wantExit(t, 0)
		help.wantExit(t, 0)
		if bare.stdout != help.stdout {
			t.Errorf("%v: bare, it prints\n%s\n--- with --help\n%s", group, bare.stdout, help.stdout)
		}
		if bare.stderr != "" {
			t.Errorf("%v: bare, it prints on stderr:\n%s", group, bare.stderr)
		}
		if !textcheck.Has(t, fmt.Sprint(group)+" bare", bare.stdout, "COMMANDS:") || t.Failed() {
			t.FailNow()
		}
	}
}

// TestUsageErrorsNameTheFix: a value a flag or a variable cannot take, a file where a folder
// is wanted, and a count of 0 are exit 2 in one line naming the flag or variable and the fix,
// with nothing printed before it.
func TestUsageErrorsNameTheFix(t *testing.T) {
	for name, c := range map[string]struct {
		env  []string
		args string
		want string
	}{
		"address":          {nil, "view --addr 7494x testdata/runs/qwen", `--addr "7494x": want HOST:PORT, :PORT or PORT`},
		"port":             {nil, "view --addr 127.0.0.1:99999 testdata/runs/qwen", `--addr "127.0.0.1:99999": want HOST:PORT, :PORT or PORT, the port 0 to 65535`},
		"pages onto file":  {nil, "view --out README.md testdata/runs/qwen", "--out README.md: it is a file, not a folder"},
		"grade a file":     {nil, "grade --dataset testdata/grade/dataset README.md", "README.md is a file; give a folder of submissions or a run folder"},
		"grade repeats 0":  {nil, "grade --dataset testdata/grade/dataset --repeats 0 testdata/grade/submissions", "--repeats 0: must be 1 to 1000 (leave it out for as many as found)"},
		"int flag":         {nil, "run --dataset demo --model builtin/baseline --parallel x", `--parallel "x": expected a whole number; see aa-grade run --help`},
		"duration flag":    {nil, "run --dataset demo --model builtin/baseline --grace soon", `--grace "soon": expected a duration such as 90s or 5m; see aa-grade run --help`},
		"int variable":     {[]string{"AA_GRADE_PARALLEL=abc"}, "run --dataset demo --model builtin/baseline", `AA_GRADE_PARALLEL="abc": --parallel expects a whole number; fix or unset the variable`},
		"boolean variable": {[]string{"AA_GRADE_JSON=maybe"}, "grade testdata/grade/submissions", `AA_GRADE_JSON="maybe": --json expects true or false; fix or unset the variable`},
	} {
		t.Run(name, func(t *testing.T) { oneErrorLine(t, aaGrade(t, c.env, strings.Fields(c.args)...), c.want) })
	}
}
