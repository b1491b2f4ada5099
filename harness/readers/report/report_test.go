package report

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// The fixtures: testdata/runs/opus is a finished, priced run whose results.jsonl has an
// episode retried after an error (the later line wins), fields of newer versions, and a last
// line cut by a crash; testdata/runs/qwen is an unpriced run stopped after 4 of its 6
// episodes, with a stale summary.json.
var (
	opusDir = filepath.Join("..", "..", "..", "testdata", "runs", "opus")
	qwenDir = filepath.Join("..", "..", "..", "testdata", "runs", "qwen")
)

func load(t *testing.T, dir string) *Run {
	t.Helper()
	r, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLoadFinishedRun(t *testing.T) {
	r := load(t, opusDir)
	var got []string
	for _, e := range r.Results {
		got = append(got, e.Task+"/"+e.Status)
	}
	want := []string{"Scenario-2/ok", "Scenario-2/ok", "Scenario-16/max_turns", "Scenario-16/ok", "Scenario-38/error", "Scenario-38/ok"}
	if !slices.Equal(got, want) {
		t.Fatalf("episodes %v, want %v", got, want)
	}
	// Scores 1, 0.5 | 0, 0 | 0, 1/3 over 6 episodes.
	s := r.Summary
	if s.Episodes != 6 || s.Tasks != 3 {
		t.Errorf("summary of %d episodes of %d tasks, want 6 of 3", s.Episodes, s.Tasks)
	}
	if want := (1.5 + 1.0/3) / 6; !near(s.Score, want) {
		t.Errorf("score %g, want %g", s.Score, want)
	}
	if s.CI95 != nil {
		t.Errorf("an interval %v over 3 tasks", *s.CI95)
	}
	o := r.Overview()
	var total float64
	for _, e := range r.Results {
		total += *e.CostUSD
	}
	if o.CostUSD == nil || o.CostPerTask == nil {
		t.Fatalf("the cost of a priced run is unknown: %+v", o)
	}
	if !near(*o.CostUSD, total) {
		t.Errorf("cost $%g, want the episodes' $%g", *o.CostUSD, total)
	}
	if !near(*o.CostPerTask, total/6) {
		t.Errorf("cost a task $%g, want $%g", *o.CostPerTask, total/6)
	}
	if o.Errors != 1 || o.NotRun != 0 {
		t.Errorf("%d errors, %d not run; want 1 and 0", o.Errors, o.NotRun)
	}
	if n := o.Statuses[grader.StatusOK]; n != 4 {
		t.Errorf("%d episodes ok, want 4", n)
	}
	if want := (24 + 31 + 100 + 40 + 0 + 52) / 6.0; !near(o.MeanTurns, want) {
		t.Errorf("mean turns %g, want %g", o.MeanTurns, want)
	}
}

func TestLoadPartialUnpricedRun(t *testing.T) {
	r := load(t, qwenDir)
	o := r.Overview()
	// The stale summary.json (0.9) is ignored: 1 + 0 + 0.5 + 0 over 6 episodes, 2 not run.
	if len(r.Results) != 4 || o.Episodes != 6 {
		t.Errorf("%d results of %d episodes, want 4 of 6", len(r.Results), o.Episodes)
	}
	if o.NotRun != 2 || o.Errors != 2 {
		t.Errorf("%d not run, %d errors (those included); want 2 and 2", o.NotRun, o.Errors)
	}
	if !near(o.Score, 0.25) {
		t.Errorf("score %g, want 0.25", o.Score)
	}
	if o.Tokens.Input == 0 {
		t.Error("no input tokens: the run used some")
	}
	if o.CostUSD != nil || o.CostPerTask != nil {
		t.Errorf("the cost of an unpriced run that used tokens is known: %v, %v a task", deref(o.CostUSD), deref(o.CostPerTask))
	}
	tasks := r.PerTask()
	if len(tasks) != 3 || tasks[2].Task != "Scenario-38" {
		t.Fatalf("tasks %+v, want Scenario-38 third of 3", tasks)
	}
	if notRun := tasks[2]; notRun.Episodes != 0 {
		t.Errorf("a task not run yet has %d episodes", notRun.Episodes)
	} else if notRun.CostUSD == nil || *notRun.CostUSD != 0 {
		t.Errorf("a task not run yet costs %v, want $0", deref(notRun.CostUSD))
	}
}

// TestCostOfEpisodesWithoutTokens: in a run with prices, an episode with no cost that used no
// tokens (a sandbox that never started) cost nothing; one that used tokens makes it unknown;
// in a run without prices the cost is unknown, never $0, even with no tokens counted.
func TestCostOfEpisodesWithoutTokens(t *testing.T) {
	free := []runfolder.Result{{Task: "a", Repeat: 1}, {Task: "a", Repeat: 2}}
	if c := cost(free, true); c == nil || *c != 0 {
		t.Fatalf("cost of episodes without tokens = %v", c)
	}
	if c := cost(free, false); c != nil {
		t.Fatalf("cost of episodes at unknown prices = %v, want unknown", *c)
	}
	price := 0.25
	mixed := append(free, runfolder.Result{Task: "b", Repeat: 1, CostUSD: &price})
	if c := cost(mixed, true); c == nil || *c != 0.25 {
		t.Fatalf("cost = %v", c)
	}
	mixed[0].Tokens.Input = 10
	if c := cost(mixed, true); c != nil {
		t.Fatalf("tokens at unknown prices must make the cost unknown, got %v", *c)
	}
}

// TestLoadKeepsEpisodesOutsideTheHeader: results for a task or repeat run.json does not list
// are reported, not dropped.
func TestLoadKeepsEpisodesOutsideTheHeader(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": "builtin/baseline", "tasks": ["Scenario-1"], "repeats": 1}`)
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), `{"task":"Scenario-1","repeat":1,"status":"ok","score":1}
{"task":"Scenario-9","repeat":2,"status":"ok","score":1}
`)
	r := load(t, dir)
	if len(r.Results) != 2 {
		t.Errorf("%d results, want 2", len(r.Results))
	}
	if r.Summary.Tasks != 2 || r.Summary.Repeats != 2 {
		t.Errorf("summary of %d tasks x %d repeats, want 2 x 2", r.Summary.Tasks, r.Summary.Repeats)
	}
	if r.Summary.Episodes != 4 {
		t.Errorf("summary of %d episodes, want 4", r.Summary.Episodes)
	}
	if t.Failed() {
		t.Fatalf("results %+v, summary %+v", r.Results, r.Summary)
	}

}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	testfs.Write(t, file, "x")
	noHeader := filepath.Join(dir, "no-header")
	testfs.Write(t, filepath.Join(noHeader, "results.jsonl"), "")
	cut := filepath.Join(dir, "cut")
	testfs.Write(t, filepath.Join(cut, "run.json"), `{"model": "openai/gpt-5.5", "tasks": [`)
	noModel := filepath.Join(dir, "no-model")
	testfs.Write(t, filepath.Join(noModel, "run.json"), `{"tasks": ["Scenario-1"]}`)
	for _, c := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "absent"), runfolder.ErrNotRunFolder},
		{file, runfolder.ErrNotRunFolder},
		{noHeader, runfolder.ErrNotRunFolder},
		{cut, runfolder.ErrCorrupt},
		{noModel, runfolder.ErrCorrupt},
	} {
		_, err := Load(c.path)
		if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.path) {
			t.Errorf("Load(%s) = %v, want %v naming the folder", c.path, err, c.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("a\nb\x1b[31mc\u2028d\u202ee", 100); got != "a bc de" {
		t.Errorf("OneLine = %q", got)
	}
	if got := OneLine("abcdef", 4); got != "abc…" {
		t.Errorf("cut = %q", got)
	}
}

func TestFormatUSD(t *testing.T) {
	v := func(f float64) *float64 { return &f }
	for _, c := range []struct {
		v    *float64
		want string
	}{{nil, "unknown"}, {v(0), "$0"}, {v(0.0042), "$0.004"}, {v(5.384), "$5.38"}} {
		if got := FormatUSD(c.v); got != c.want {
			t.Errorf("FormatUSD(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}

// TestWriteFolder writes the three reports into a copy of a run folder; a report that cannot
// be written is an error naming it, and a folder that is not a run gets nothing.
func TestWriteFolder(t *testing.T) {
	dir := copyRun(t, opusDir)
	if _, err := WriteFolder(dir, nil); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{ParquetFile, MarkdownFile, HTMLFile} {
		if info, err := os.Stat(filepath.Join(dir, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s: %v", f, err)
		}
	}

	blocked := copyRun(t, opusDir)
	testfs.Write(t, filepath.Join(blocked, HTMLFile, "keep"), "x")
	if _, err := WriteFolder(blocked, nil); err == nil || !strings.Contains(err.Error(), HTMLFile) {
		t.Fatalf("report.html blocked by a folder: %v", err)
	}
	if _, err := os.Stat(filepath.Join(blocked, HTMLFile, "keep")); err != nil {
		t.Fatalf("the folder in the way was changed: %v", err)
	}

	// An analysis that fails (here: the episodes folder is a file) leaves the reports whole,
	// saying what is missing.
	unlisted := copyRun(t, opusDir)
	testfs.Write(t, filepath.Join(unlisted, "episodes"), "not a folder")
	r, err := WriteFolder(unlisted, []analysis.Task{})
	if err != nil || r.AnalysisErr == nil {
		t.Fatalf("a failed analysis: err %v, want the reports written and the analysis error kept", err)
	}
	md, _ := os.ReadFile(filepath.Join(unlisted, MarkdownFile))
	if !strings.Contains(string(md), "## Analysis\n\nLeft out: analyse the run") {
		t.Fatalf("report.md does not say the analysis is left out:\n%s", md)
	}
	for _, f := range []string{ParquetFile, HTMLFile} {
		if info, err := os.Stat(filepath.Join(unlisted, f)); err != nil || info.Size() == 0 {
			t.Errorf("%s after a failed analysis: %v", f, err)
		}
	}

	empty := t.TempDir()
	if _, err := WriteFolder(empty, nil); !errors.Is(err, runfolder.ErrNotRunFolder) {
		t.Fatalf("not a run folder: %v", err)
	}
	if entries, _ := os.ReadDir(empty); len(entries) != 0 {
		t.Fatalf("wrote into a folder that is not a run: %v", entries)
	}
}

// copyRun copies a fixture's run.json and results.jsonl into a fresh folder.
func copyRun(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"run.json", "results.jsonl"} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		testfs.Write(t, filepath.Join(dir, f), string(b))
	}
	return dir
}

// TestErrorsText: episodes not run yet are told apart from episodes that ended in error.
func TestErrorsText(t *testing.T) {
	for _, c := range []struct {
		errors, notRun int
		want           string
	}{{2, 0, "2"}, {21, 21, "21 (21 not run)"}, {3, 1, "3 (1 not run)"}} {
		if got := (Overview{Errors: c.errors, NotRun: c.notRun}).ErrorsText(); got != c.want {
			t.Errorf("%d errors, %d not run: %q, want %q", c.errors, c.notRun, got, c.want)
		}
	}
}

// TestLenientRunsAreMarked: the reports of a run that did not follow the reference loop (one
// recorded before the loop was, here) say it is not comparable with the leaderboard, in
// report.md, report.html and the overview; a reference run's say nothing of it.
func TestLenientRunsAreMarked(t *testing.T) {
	for _, loop := range []string{"", "reference"} {
		dir := copyRun(t, opusDir)
		if loop != "" {
			header, _ := os.ReadFile(filepath.Join(dir, "run.json"))
			testfs.Write(t, filepath.Join(dir, "run.json"), strings.Replace(string(header), "{", `{"loop": "`+loop+`", `, 1))
		}
		r, err := WriteFolder(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		marked := loop != "reference"
		if o := r.Overview(); (o.Caveat != "") != marked || o.Loop != map[bool]string{true: "lenient", false: "reference"}[marked] {
			t.Errorf("loop %q: overview loop %q, caveat %q", loop, o.Loop, o.Caveat)
		}
		for _, f := range []string{MarkdownFile, HTMLFile} {
			b, _ := os.ReadFile(filepath.Join(dir, f))
			if strings.Contains(string(b), "Not comparable with the published leaderboard") != marked {
				t.Errorf("loop %q: %s marked %v, want %v", loop, f, !marked, marked)
			}
		}
	}
}
