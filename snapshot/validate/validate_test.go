package validate

import (
	"cmp"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
	"github.com/aa-grade/aa-grade/snapshot"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/synth/naive"
)

// goodTask generates one well-formed task and returns a fresh copy of it for each call.
func goodTask(t *testing.T) func() data.Task {
	t.Helper()
	src := filepath.Join(t.TempDir(), "Scenario-900")
	if _, err := synth.Generate(src, synth.Options{Fault: "netpol", Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return func() data.Task {
		dst := filepath.Join(t.TempDir(), "Scenario-900")
		if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
			t.Fatalf("copy: %v %s", err, out)
		}
		gt, err := os.ReadFile(filepath.Join(dst, data.GroundTruthFile))
		if err != nil {
			t.Fatal(err)
		}
		row := &data.IndexRow{IDAA: "it-bench-sre-public-scenario-900", ScenarioID: "Scenario-900", Category: "sre",
			SourceSplit: "public", ScenarioRoot: "/home/user", GroundTruthYAML: string(gt)}
		return data.Task{ID: "Scenario-900", Dir: dst, GroundTruth: gt, Row: row}
	}
}

func findings(r Report, level string) []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Level == level {
			out = append(out, f)
		}
	}
	return out
}

func TestGoodTaskHasNoErrorOrWarning(t *testing.T) {
	r := Task(goodTask(t)())
	if errs, warns := findings(r, Error), findings(r, Warning); len(errs)+len(warns) > 0 {
		t.Fatalf("errors %+v\nwarnings %+v", errs, warns)
	}
	infos := findings(r, Info)
	if len(infos) != 1 {
		t.Fatalf("info = %+v, want one", infos)
	}
	if infos[0].Code != CodeSolvable {
		t.Errorf("info %s, want %s", infos[0].Code, CodeSolvable)
	}
	if !textcheck.Has(t, "the info", infos[0].Message, "otel-demo/NetworkPolicy/") || t.Failed() {
		t.FailNow()
	}

}

// TestOneBrokenTaskPerFinding breaks a good task in one way per finding code and checks that
// exactly that code is reported, at the expected level and file.
func TestOneBrokenTaskPerFinding(t *testing.T) {
	fresh := goodTask(t)
	gtPath := func(task data.Task) string { return filepath.Join(task.Dir, data.GroundTruthFile) }
	cases := []struct {
		name, code, level, file, text string
		breakIt                       func(t *testing.T, task *data.Task)
	}{
		{"missing traces", CodeMissingFile, Error, "otel_traces_raw.tsv", "is missing", func(t *testing.T, task *data.Task) {
			os.Remove(filepath.Join(task.Dir, "otel_traces_raw.tsv"))
		}},
		{"no metrics", CodeMissingFile, Warning, "metrics/", "no metrics file", func(t *testing.T, task *data.Task) {
			os.RemoveAll(filepath.Join(task.Dir, "metrics"))
		}},
		{"alerts not JSON", CodeUnreadable, Error, "alerts/", "not valid JSON", func(t *testing.T, task *data.Task) {
			files, _ := filepath.Glob(filepath.Join(task.Dir, "alerts", "*.json"))
			testfs.Write(t, files[3], "[{\"labels\": ")
		}},
		{"table without header", CodeUnreadable, Error, "otel_logs_raw.tsv", "no header", func(t *testing.T, task *data.Task) {
			testfs.Write(t, filepath.Join(task.Dir, "otel_logs_raw.tsv"), "")
		}},
		{"broken record", CodeBadRows, Error, "k8s_events_raw.tsv", "records cannot be read", func(t *testing.T, task *data.Task) {
			appendTo(t, filepath.Join(task.Dir, "k8s_events_raw.tsv"), "2025-12-01 10:00:00.000000000\t\"unterminated\n")
		}},
		{"event body not JSON", CodeBadRows, Error, "k8s_events_raw.tsv", "Body is not JSON", func(t *testing.T, task *data.Task) {
			appendTo(t, filepath.Join(task.Dir, "k8s_events_raw.tsv"), strings.Repeat("x\t", 8)+"{not json"+strings.Repeat("\tx", 8)+"\n")
		}},
		{"empty table", CodeEmptyTable, Warning, "otel_logs_raw.tsv", "no record", func(t *testing.T, task *data.Task) {
			testfs.Write(t, filepath.Join(task.Dir, "otel_logs_raw.tsv"), strings.Join(snapshot.Columns[snapshot.Logs], "\t")+"\n")
		}},
		{"no root cause", CodeGroundTruth, Error, data.GroundTruthFile, "no group has root_cause", func(t *testing.T, task *data.Task) {
			task.GroundTruth = []byte(strings.ReplaceAll(string(task.GroundTruth), "root_cause: true", "root_cause: false"))
		}},
		{"glob filter", CodeGlobFilter, Warning, data.GroundTruthFile, "shell glob", func(t *testing.T, task *data.Task) {
			task.GroundTruth = []byte(strings.Replace(string(task.GroundTruth), "groups:\n", "groups:\n  - {id: any-hpa, kind: HorizontalPodAutoscaler, namespace: otel-demo, filter: ['*.*']}\n", 1))
		}},
		{"unsolvable", CodeUnsolvable, Error, data.GroundTruthFile, "matches no object", func(t *testing.T, task *data.Task) {
			task.GroundTruth = []byte(strings.ReplaceAll(string(task.GroundTruth), "kind: NetworkPolicy", "kind: PodChaos"))
		}},
		{"dead filter", CodeDeadFilter, Warning, data.GroundTruthFile, "filter deny-qoute-.* of root cause deny-quote-ingress matches no object of the snapshot (the group matches through its other names); closest: otel-demo/NetworkPolicy/deny-quote-ingress", func(t *testing.T, task *data.Task) {
			task.GroundTruth = []byte(strings.Replace(string(task.GroundTruth), "filter:\n      - deny-quote-ingress\n", "filter:\n      - deny-quote-ingress\n      - deny-qoute-.*\n", 1))
		}},
		{"id disagrees", CodeIDMismatch, Warning, data.GroundTruthFile, "root cause block-quote-netpol-1 reads as NetworkPolicy block-quote, which its matching deny-quote-ingress does not accept (no object of the snapshot is named so)", func(t *testing.T, task *data.Task) {
			task.GroundTruth = []byte(strings.Replace(string(task.GroundTruth), "    id: deny-quote-ingress\n", "    id: block-quote-netpol-1\n", 1))
		}},
		{"answer copied", CodeAnswerVisible, Error, "alerts/notes.txt", "copy of the ground truth", func(t *testing.T, task *data.Task) {
			testfs.Write(t, filepath.Join(task.Dir, "alerts", "notes.txt"), "# notes\n"+string(task.GroundTruth))
		}},
		{"answer renamed", CodeAnswerVisible, Error, "metrics/ground_truth.bak", "named like the answer key", func(t *testing.T, task *data.Task) {
			testfs.Write(t, filepath.Join(task.Dir, "metrics", "ground_truth.bak"), "x")
		}},
		{"index row", CodeIndexMismatch, Error, "data.jsonl", `scenario_id "Scenario-9"`, func(t *testing.T, task *data.Task) {
			task.Row.ScenarioID = "Scenario-9"
		}},
		{"index root", CodeIndexMismatch, Warning, "data.jsonl", "scenario_root", func(t *testing.T, task *data.Task) {
			task.Row.ScenarioRoot = "/data"
		}},
		{"index ground truth", CodeIndexMismatch, Warning, "data.jsonl", "differs from the folder", func(t *testing.T, task *data.Task) {
			testfs.Write(t, gtPath(*task), string(task.GroundTruth)+"# edited\n")
		}},
		{"time windows", CodeTimeWindows, Error, "", "do not overlap", func(t *testing.T, task *data.Task) {
			files, _ := filepath.Glob(filepath.Join(task.Dir, "alerts", "*.json"))
			for _, f := range files {
				os.Rename(f, filepath.Join(task.Dir, "alerts", strings.Replace(filepath.Base(f), "2025-", "2019-", 1)))
			}
		}},
		{"swapped columns", CodeSchema, Error, "otel_traces_raw.tsv", "column 6 is SpanKind, the real schema has SpanName", func(t *testing.T, task *data.Task) {
			path := filepath.Join(task.Dir, "otel_traces_raw.tsv")
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			testfs.Write(t, path, strings.Replace(string(b), "SpanName\tSpanKind", "SpanKind\tSpanName", 1))
		}},
		{"thin metrics", CodeThinMetrics, Warning, "metrics/", "2 pod and 2 service metrics files", func(t *testing.T, task *data.Task) {
			for _, pattern := range []string{"pod_*", "service_*"} {
				files, _ := filepath.Glob(filepath.Join(task.Dir, "metrics", pattern))
				for _, f := range files[2:] {
					os.Remove(f)
				}
			}
		}},
		{"no snapshot", CodeNoSnapshot, Error, "", "no snapshot folder", func(t *testing.T, task *data.Task) {
			task.Dir = ""
		}},
		{"snapshot unreadable", CodeReadSnapshot, Error, "", "no such file", func(t *testing.T, task *data.Task) {
			task.Dir = filepath.Join(task.Dir, "gone")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := fresh()
			c.breakIt(t, &task)
			r := Task(task)
			var hit *Finding
			for i, f := range r.Findings {
				if f.Code == c.code && f.Level == c.level && strings.HasPrefix(f.File, c.file) && strings.Contains(f.Message, c.text) {
					hit = &r.Findings[i]
				}
			}
			if hit == nil {
				t.Fatalf("no %s %s on %s saying %q; findings:\n%+v", c.level, c.code, c.file, c.text, r.Findings)
			}
			for _, f := range r.Findings {
				if f.Level != Info && f.Code != c.code && f.Code != CodeUnsolvable && f.Code != CodeEmptyTable {
					t.Errorf("unexpected extra finding %+v", f)
				}
			}
		})
	}
}

func appendTo(t *testing.T, path, text string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(text); err != nil {
		t.Fatal(err)
	}
}

// TestUnsolvableRootCauseNamesTheClosest: Scenario-29's shape, a filter `.*adservice` for a
// workload the snapshot calls `ad`: the error names the Deployment ad first.
func TestUnsolvableRootCauseNamesTheClosest(t *testing.T) {
	task := goodTask(t)()
	task.GroundTruth = []byte(strings.Replace(string(task.GroundTruth), "  - filter:\n      - deny-quote-ingress\n    id: deny-quote-ingress\n    kind: NetworkPolicy\n",
		"  - filter:\n      - '.*adservice'\n    id: ad-deployment-1\n    kind: Deployment\n", 1))
	var got []Finding
	for _, f := range Task(task).Findings {
		if f.Code == CodeUnsolvable || f.Code == CodeIDMismatch {
			got = append(got, f)
		}
	}
	if len(got) != 2 {
		t.Fatalf("%d findings, want 2: %+v\nall: %+v", len(got), got, Task(task).Findings)
	}
	if got[0].Level != Error || got[1].Level != Warning {
		t.Errorf("findings of level %v and %v, want %v and %v", got[0].Level, got[1].Level, Error, Warning)
	}
	textcheck.Has(t, "the first finding", got[0].Message, "closest: otel-demo/Deployment/ad, ")
	textcheck.Has(t, "the second finding", got[1].Message, "reads as Deployment ad, which its matching .*adservice does not accept (an object of the snapshot is named so)")
	if t.Failed() {
		t.FailNow()
	}
}

// TestRealIDsThatDisagreeWithTheirFilters reads IBM's public ground truths: by the grader's
// rules the ids of Scenarios 20, 26, 29, 34 and 40 name what their filters refuse (23's and
// 105's `checkout-.*` and `product-catalog-.*` accept the bare names their ids read as).
func TestRealIDsThatDisagreeWithTheirFilters(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t), "ground-truth", "itbench-github")
	files, err := filepath.Glob(filepath.Join(dir, "scenario_*.yaml"))
	if err != nil || len(files) < 39 {
		t.Fatalf("%d ground truths in %s: %v", len(files), dir, err)
	}
	var got []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gt, err := grader.ParseGroundTruth(b)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, g := range gt.Groups {
			if _, disagrees := idDisagrees(g); disagrees && g.RootCause {
				got = append(got, strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "scenario_"), ".yaml"))
			}
		}
	}
	slices.SortFunc(got, func(a, b string) int { return cmp.Or(cmp.Compare(len(a), len(b)), strings.Compare(a, b)) })
	if strings.Join(got, ",") != "20,26,29,34,40" {
		t.Fatalf("ids that disagree with their filters: %v", got)
	}
}

// TestDifficultyNamesTheSolverAndItsEvidence: a task whose alerts name its root cause is
// solved by alert-labels, and the warning says which alert gave it away; the other solvers
// get their scores as infos; a solver that failed is a warning.
func TestDifficultyNamesTheSolverAndItsEvidence(t *testing.T) {
	task := goodTask(t)()
	testfs.Write(t, filepath.Join(task.Dir, "alerts", "alerts_at_2025-12-15T17-40-00.000000.json"),
		`[{"labels":{"alertname":"NetworkPolicyDenies","namespace":"otel-demo","networkpolicy":"deny-quote-ingress"}}]`)
	r := Report{Task: task.ID}
	attempts := append(NaiveAttempts(task.Dir),
		Attempt{Solver: "giveaway", Answer: []naive.Answer{{Entity: "otel-demo/NetworkPolicy/deny-quote-ingress", Evidence: "alert NetworkPolicyDenies in alerts/alerts_at_2025-12-15T17-40-00.000000.json"}}},
		Attempt{Solver: "broken", Err: errors.New("no python3")})
	AddDifficulty(&r, task.GroundTruth, attempts)
	if len(r.Difficulty) != len(naive.Solvers)+2 {
		t.Fatalf("difficulty: %+v", r.Difficulty)
	}
	var giveaways, infos, failures []string
	for _, f := range r.Findings {
		switch {
		case f.Code == CodeGiveaway:
			giveaways = append(giveaways, f.Message)
		case f.Code == CodeDifficulty && f.Level == Info:
			infos = append(infos, f.Message)
		case f.Code == CodeDifficulty && f.Level == Warning:
			failures = append(failures, f.Message)
		}
	}
	want := "giveaway, which knows nothing of faults, solves the task (score 1.00, from 0.50): otel-demo/NetworkPolicy/deny-quote-ingress from alert NetworkPolicyDenies in alerts/alerts_at_2025-12-15T17-40-00.000000.json"
	if len(giveaways) != 1 || giveaways[0] != want {
		t.Errorf("giveaways: %q", giveaways)
	}
	if len(infos) != len(naive.Solvers)+1 || !strings.HasPrefix(infos[0], "alert-labels scores ") {
		t.Errorf("infos: %q", infos)
	}
	if got := infos[len(infos)-1]; got != "giveaway scores 1.00 (1 of 1 root causes in 1 entity)" {
		t.Errorf("the giveaway's info: %q, want one entity in the singular", got)
	}
	if len(failures) != 1 || !strings.Contains(failures[0], "broken could not answer: no python3") {
		t.Errorf("failures: %q", failures)
	}
}
