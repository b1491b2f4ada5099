package validate

import (
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// Stats describe a task the way an author compares it with the real ones: how noisy its
// alerts are, whether errors are there before anything breaks, how big and how restless
// its object dumps are.
type Stats struct {
	AlertNames      map[string]int `json:"alert_names"`      // alert name -> alerts files it fires in
	AlertsFiles     int            `json:"alerts_files"`     // files in alerts/
	ErrorSignatures int            `json:"error_signatures"` // distinct error texts in traces and logs
	EarlySignatures []string       `json:"early_signatures"` // error texts of the first five minutes, before most faults
	Dumps           int            `json:"dumps"`            // object dumps
	ObjectsPerDump  []int          `json:"objects_per_dump"` // objects in each dump
	KindsPerDump    []int          `json:"kinds_per_dump"`   // distinct kinds in each dump
	// objects added, removed or changed between the first and last dump
	ChangedObjects  int            `json:"changed_objects"`
	ChangedByKind   map[string]int `json:"changed_by_kind"`   // the same, by kind
	MetricsFiles    int            `json:"metrics_files"`     // pod and service metrics files
	TraceErrorShare float64        `json:"trace_error_share"` // spans with status Error over all spans
}

// earlyWindow is how long after the first record errors count as "before the fault".
const earlyWindow = 5 * time.Minute

// numbers are the runs signature folds: hex ids (6 or more hex characters, at least one a
// digit, so that words such as "exceeded" stay) and decimal numbers.
var numbers = regexp.MustCompile(`[0-9a-f]{6,}|[0-9]+`)

// signature makes error texts that differ only in numbers and ids one signature.
func signature(text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if len(first) > 120 {
		first = first[:120]
	}
	return numbers.ReplaceAllStringFunc(first, func(run string) string {
		if strings.ContainsAny(run, "0123456789") {
			return "#"
		}
		return run
	})
}

// TaskStats reads a task's snapshot folder and computes its statistics.
func TaskStats(dir string) (*Stats, error) {
	snap, err := snapshot.Read(dir)
	if err != nil {
		return nil, err
	}
	st := &Stats{AlertNames: map[string]int{}, ChangedByKind: map[string]int{}, EarlySignatures: []string{},
		ObjectsPerDump: []int{}, KindsPerDump: []int{}}
	for _, af := range snap.Alerts {
		st.AlertsFiles++
		seen := map[string]bool{}
		for _, a := range af.Alerts {
			if !seen[a.Name] {
				seen[a.Name] = true
				st.AlertNames[a.Name]++
			}
		}
	}
	for _, f := range snap.Files {
		if f.Table == snapshot.PodMetrics || f.Table == snapshot.ServiceMetrics {
			st.MetricsFiles++
		}
	}
	signatures, early := map[string]bool{}, map[string]bool{}
	note := func(start time.Time, t time.Time, text string) {
		sig := signature(text)
		signatures[sig] = true
		if !start.IsZero() && t.Sub(start) < earlyWindow {
			early[sig] = true
		}
	}
	spans, failed := 0, 0
	for _, table := range []struct{ file, status, text string }{{"otel_traces_raw.tsv", "StatusCode", "StatusMessage"},
		{"otel_logs_raw.tsv", "SeverityText", "Body"}} {
		start := time.Time{}
		if ts := snap.Tables[table.file]; ts != nil {
			start = ts.First
		}
		_, err := snapshot.ScanTable(filepath.Join(dir, table.file), func(r snapshot.Row) error {
			if table.file == "otel_traces_raw.tsv" {
				spans++
			}
			if v := r.Get(table.status); v == "Error" || v == "ERROR" {
				if table.file == "otel_traces_raw.tsv" {
					failed++
				}
				t, _ := r.Time("Timestamp")
				note(start, t, r.Get(table.text))
			}
			return nil
		})
		if err != nil && snap.Tables[table.file] != nil {
			return nil, err
		}
	}
	if spans > 0 {
		st.TraceErrorShare = float64(failed) / float64(spans)
	}
	st.ErrorSignatures = len(signatures)
	for sig := range early {
		st.EarlySignatures = append(st.EarlySignatures, sig)
	}
	sort.Strings(st.EarlySignatures)
	if err := st.dumps(filepath.Join(dir, "k8s_objects_raw.tsv")); err != nil &&
		snap.Tables["k8s_objects_raw.tsv"] != nil {
		return nil, err
	}
	return st, nil
}

// dumps splits the objects table into dumps (rows within a minute of a dump's first) and
// compares the first with the last.
func (st *Stats) dumps(path string) error {
	all, err := snapshot.ReadObjectDumps(path)
	if err != nil {
		return err
	}
	st.Dumps = len(all)
	for _, d := range all {
		kinds := map[string]bool{}
		for ref := range d.Bodies {
			kinds[ref.Kind] = true
		}
		st.ObjectsPerDump = append(st.ObjectsPerDump, len(d.Bodies))
		st.KindsPerDump = append(st.KindsPerDump, len(kinds))
	}
	if len(all) < 2 {
		return nil
	}
	for _, ref := range snapshot.ChangedObjects(all[0], all[len(all)-1]) {
		st.ChangedObjects++
		st.ChangedByKind[ref.Kind]++
	}
	return nil
}
