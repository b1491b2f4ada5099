// Package validate checks that a benchmark task is well-formed and answerable before it is
// released: its files read, its ground truth follows the grader's rules, every root cause is
// an object the snapshot shows, the answer key is hidden from the agent, and the index row
// and time windows agree with the folder.
package validate

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot"
)

// Levels of a finding.
const (
	Error   = "error"
	Warning = "warning"
	Info    = "info"
)

// Finding is one thing validation noticed about a task.
type Finding struct {
	Level   string `json:"level"`
	Code    string `json:"code"`
	File    string `json:"file,omitempty"` // relative to the task folder
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

// Report is the validation of one task.
type Report struct {
	Task     string    `json:"task"`
	Findings []Finding `json:"findings"`
	Stats    *Stats    `json:"stats,omitempty"` // with tasks validate --stats
	// Difficulty is how fault-agnostic solvers did on the task (tasks validate --difficulty).
	Difficulty []SolverScore `json:"difficulty,omitempty"`
}

// Errors counts the findings of level error.
func (r Report) Errors() int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == Error {
			n++
		}
	}
	return n
}

// Finding codes, one per kind of problem.
const (
	CodeMissingFile   = "missing-file"    // a required snapshot file is absent
	CodeUnreadable    = "unreadable-file" // a file cannot be read at all
	CodeBadRows       = "bad-rows"        // records of a table or alerts that cannot be read
	CodeEmptyTable    = "empty-table"     // a table with no record
	CodeGroundTruth   = "ground-truth"    // the ground truth breaks the grader's rules
	CodeGlobFilter    = "glob-filter"     // a filter read as a shell glob
	CodeUnsolvable    = "unsolvable"      // a root cause matches no object of the snapshot
	CodeSolvable      = "root-cause"      // the objects a root cause matches
	CodeDeadFilter    = "dead-filter"     // a filter of a root cause that matches no object
	CodeIDMismatch    = "id-filter"       // a root cause's id names what its filters do not accept
	CodeAnswerVisible = "answer-visible"  // the answer key is among the files the agent sees
	CodeIndexMismatch = "index-mismatch"  // the data.jsonl row disagrees with the folder
	CodeTimeWindows   = "time-windows"    // alerts, events and traces do not overlap in time
	CodeNoSnapshot    = "no-snapshot"     // the task has no snapshot folder
	CodeReadSnapshot  = "read-snapshot"   // the snapshot folder cannot be listed
	CodeSchema        = "schema"          // a table's columns differ from the real schema
	CodeThinMetrics   = "thin-metrics"    // far fewer metrics files than real tasks have
	maxMatchesListed  = 10
	maxRowFindings    = 5
	maxCopyCheckBytes = 4 << 20
	// Real tasks have about 20 pod and 15 service metrics files; fewer than this many of
	// either leaves an agent little to read.
	minMetricsFiles = 8
)

// LooksLikeTask says whether dir is a folder holding one of a snapshot's tables or its alerts
// folder: a task, with or without its answer key.
func LooksLikeTask(dir string) bool {
	for _, name := range append(requiredFiles, "alerts") {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// requiredFiles must be in every snapshot; the alerts and metrics folders must hold files.
var requiredFiles = []string{"k8s_events_raw.tsv", "k8s_objects_raw.tsv", "otel_logs_raw.tsv", "otel_traces_raw.tsv"}

// Task validates one task of a dataset.
func Task(t data.Task) Report {
	v := &validation{report: Report{Task: t.ID, Findings: []Finding{}}}
	gt, err := grader.ParseGroundTruth(t.GroundTruth)
	switch {
	case t.GroundTruth == nil && t.Row == nil:
		gt = nil
		v.add(Error, CodeMissingFile, data.GroundTruthFile, 0, "the answer key %s is missing: nothing can be graded",
			data.GroundTruthFile)
	case err != nil:
		v.add(Error, CodeGroundTruth, data.GroundTruthFile, 0, "%v", err)
	default:
		for _, w := range gt.Warnings {
			v.add(Warning, CodeGlobFilter, data.GroundTruthFile, 0, "%s", w)
		}
	}
	if t.Dir == "" {
		v.add(Error, CodeNoSnapshot, "", 0, "the task has no snapshot folder")
		return v.report
	}
	snap, err := snapshot.Read(t.Dir)
	if err != nil {
		v.add(Error, CodeReadSnapshot, "", 0, "%v", err)
		return v.report
	}
	v.files(snap)
	v.schema(snap)
	v.rows(snap)
	if gt != nil {
		v.rootCauses(gt, snap)
	}
	v.answerHidden(t, snap)
	v.index(t)
	v.timeWindows(snap)
	return v.report
}

type validation struct {
	report Report
}

func (v *validation) add(level, code, file string, line int, format string, args ...any) {
	v.report.Findings = append(v.report.Findings,
		Finding{Level: level, Code: code, File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

// files checks that the required files are present.
func (v *validation) files(snap *snapshot.Snapshot) {
	have := map[string]bool{}
	alerts, metrics, pods, services := 0, 0, 0, 0
	for _, f := range snap.Files {
		have[f.Path] = true
		if f.Alert {
			alerts++
		}
		switch f.Table {
		case snapshot.PodMetrics:
			metrics++
			pods++
		case snapshot.ServiceMetrics:
			metrics++
			services++
		}
	}
	for _, f := range requiredFiles {
		if !have[f] {
			v.add(Error, CodeMissingFile, f, 0, "required file %s is missing", f)
		}
	}
	if alerts == 0 {
		v.add(Error, CodeMissingFile, "alerts/", 0, "no alerts file (alerts/alerts_*.json)")
	}
	if metrics == 0 {
		v.add(Warning, CodeMissingFile, "metrics/", 0, "no metrics file (metrics/pod_*_raw.tsv, metrics/service_*_raw.tsv)")
		return
	}
	if pods < minMetricsFiles || services < minMetricsFiles {
		v.add(Warning, CodeThinMetrics, "metrics/", 0, "%d pod and %d service metrics files; real tasks have about 20 and 15",
			pods, services)
	}
}

// schema checks each table's header against the real one: the same columns in the same
// order (readers that go by position, as pandas users often do, read the wrong column).
func (v *validation) schema(snap *snapshot.Snapshot) {
	for _, path := range sortedKeys(snap.Tables) {
		st := snap.Tables[path]
		want := snapshot.Columns[st.Table]
		if want == nil || st.Header == nil || slices.Equal(st.Header, want) {
			continue
		}
		for i := range max(len(want), len(st.Header)) {
			got, exp := "(none)", "(none)"
			if i < len(st.Header) {
				got = st.Header[i]
			}
			if i < len(want) {
				exp = want[i]
			}
			if got != exp {
				v.add(Error, CodeSchema, path, 1, "column %d is %s, the real schema has %s there (%d columns: %s)", i+1, got, exp,
					len(want), strings.Join(want, " "))
				break
			}
		}
	}
}

// rows reports files that could not be read and tables with records that cannot be read.
func (v *validation) rows(snap *snapshot.Snapshot) {
	unreadable := map[string]bool{}
	for _, p := range snap.Problems {
		unreadable[p.File] = true
		v.add(Error, CodeUnreadable, p.File, p.Line, "%v", p.Err)
	}
	for _, path := range sortedKeys(snap.Tables) {
		st := snap.Tables[path]
		if st.BadRows > 0 {
			for i, p := range st.Problems {
				if i == maxRowFindings {
					break
				}
				v.add(Error, CodeBadRows, path, p.Line, "%v", p.Err)
			}
			v.add(Error, CodeBadRows, path, 0, "%d of %d records cannot be read (the agent's tools may choke on them too)",
				st.BadRows, st.BadRows+st.Rows)
		}
		if st.Rows == 0 && st.BadRows == 0 && !unreadable[path] {
			v.add(Warning, CodeEmptyTable, path, 0, "the table has no record")
		}
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func describeNames(g grader.Group) string {
	var parts []string
	if g.Namespace != "" {
		parts = append(parts, "in "+g.Namespace)
	}
	if g.Name != "" {
		parts = append(parts, "named "+g.Name)
	}
	for _, f := range g.Filters {
		parts = append(parts, "matching "+f.Pattern)
	}
	return strings.Join(parts, ", ")
}

// answerHidden checks that no file the agent sees is the ground truth or a copy of it. The
// sandbox shows the snapshot folder without its top-level ground_truth.yaml.
func (v *validation) answerHidden(t data.Task, snap *snapshot.Snapshot) {
	key := bytes.TrimSpace(t.GroundTruth)
	if len(key) == 0 {
		return
	}
	sum := sha256.Sum256(key)
	for _, f := range snap.Files {
		if f.Path == data.GroundTruthFile {
			continue
		}
		if strings.Contains(strings.ToLower(filepath.Base(f.Path)), "ground_truth") {
			v.add(Error, CodeAnswerVisible, f.Path, 0, "a file named like the answer key is visible to the agent")
			continue
		}
		if f.Size > maxCopyCheckBytes || f.Size < int64(len(key)) {
			continue
		}
		content, err := readAll(filepath.Join(snap.Dir, filepath.FromSlash(f.Path)))
		if err != nil {
			continue
		}
		if sha256.Sum256(bytes.TrimSpace(content)) == sum || bytes.Contains(content, key) {
			v.add(Error, CodeAnswerVisible, f.Path, 0, "the file holds a copy of the ground truth, and the agent can read it")
		}
	}
}

func readAll(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	return io.ReadAll(io.LimitReader(f, maxCopyCheckBytes+1))
}

// index checks the data.jsonl row against the folder.
func (v *validation) index(t data.Task) {
	row := t.Row
	if row == nil {
		return
	}
	const file = data.IndexFile
	if row.ScenarioID != t.ID {
		v.add(Error, CodeIndexMismatch, file, 0, "scenario_id %q but the folder is %s", row.ScenarioID, t.ID)
	}
	if row.Category != data.Category {
		v.add(Warning, CodeIndexMismatch, file, 0, "category is %q, expected %q", row.Category, data.Category)
	}
	if row.ScenarioRoot != data.ScenarioRoot {
		v.add(Warning, CodeIndexMismatch, file, 0,
			"scenario_root is %q, expected %q (where the reference sandbox mounts the snapshot)", row.ScenarioRoot,
			data.ScenarioRoot)
	}
	if !data.ValidSplit(row.SourceSplit) {
		v.add(Warning, CodeIndexMismatch, file, 0, "source_split is %q, expected public or private", row.SourceSplit)
	}
	if row.IDAA == "" {
		v.add(Warning, CodeIndexMismatch, file, 0, "id_aa is empty")
	}
	if row.GroundTruthYAML == "" {
		v.add(Error, CodeIndexMismatch, file, 0, "ground_truth_yaml is empty")
	} else if t.Dir != "" {
		folder, err := os.ReadFile(filepath.Join(t.Dir, data.GroundTruthFile))
		if err == nil && !bytes.Equal(bytes.TrimSpace(folder), bytes.TrimSpace([]byte(row.GroundTruthYAML))) {
			v.add(Warning, CodeIndexMismatch, file, 0, "ground_truth_yaml differs from the folder's %s; the row is graded",
				data.GroundTruthFile)
		}
	}
}

// window is a span of time some evidence covers.
type window struct {
	name        string
	first, last time.Time
}

// timeWindows checks that alerts, events and traces cover overlapping time.
func (v *validation) timeWindows(snap *snapshot.Snapshot) {
	var windows []window
	alerts := window{name: "alerts"}
	for _, a := range snap.Alerts {
		if a.Time.IsZero() {
			continue
		}
		if alerts.first.IsZero() || a.Time.Before(alerts.first) {
			alerts.first = a.Time
		}
		if a.Time.After(alerts.last) {
			alerts.last = a.Time
		}
	}
	if !alerts.first.IsZero() {
		windows = append(windows, alerts)
	}
	for _, name := range []string{"k8s_events_raw.tsv", "otel_traces_raw.tsv"} {
		if st := snap.Tables[name]; st != nil && !st.First.IsZero() {
			windows = append(windows, window{name: name, first: st.First, last: st.Last})
		}
	}
	for i := range windows {
		for j := i + 1; j < len(windows); j++ {
			a, b := windows[i], windows[j]
			if a.last.Before(b.first) || b.last.Before(a.first) {
				v.add(Error, CodeTimeWindows, "", 0, "%s (%s to %s) and %s (%s to %s) do not overlap", a.name,
					a.first.Format(time.RFC3339), a.last.Format(time.RFC3339), b.name, b.first.Format(time.RFC3339),
					b.last.Format(time.RFC3339))
			}
		}
	}
}
