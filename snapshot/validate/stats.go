package validate

import (
	"encoding/json"
	"fmt"
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
	AlertNames      map[string]int `json:"alert_names"`       // alert name -> alerts files it fires in
	AlertsFiles     int            `json:"alerts_files"`      // files in alerts/
	ErrorSignatures int            `json:"error_signatures"`  // distinct error texts in traces and logs
	EarlySignatures []string       `json:"early_signatures"`  // error texts of the first five minutes, before most faults
	Dumps           int            `json:"dumps"`             // object dumps
	ObjectsPerDump  []int          `json:"objects_per_dump"`  // objects in each dump
	KindsPerDump    []int          `json:"kinds_per_dump"`    // distinct kinds in each dump
	ChangedObjects  int            `json:"changed_objects"`   // objects added, removed or changed between the first and last dump
	ChangedByKind   map[string]int `json:"changed_by_kind"`   // the same, by kind
	MetricsFiles    int            `json:"metrics_files"`     // pod and service metrics files
	TraceErrorShare float64        `json:"trace_error_share"` // spans with status Error over all spans
}

// earlyWindow is how long after the first record errors count as "before the fault".
const earlyWindow = 5 * time.Minute

// digits makes error texts that differ only in numbers one signature.
var digits = regexp.MustCompile(`[0-9a-f]{6,}|[0-9]+`)

func signature(text string) string {
	first, _, _ := strings.Cut(strings.TrimSpace(text), "\n")
	if len(first) > 120 {
		first = first[:120]
	}
	return digits.ReplaceAllString(first, "#")
}

// TaskStats reads a task's snapshot folder and computes its statistics.
func TaskStats(dir string) (*Stats, error) {
	snap, err := snapshot.Read(dir)
	if err != nil {
		return nil, err
	}
	st := &Stats{AlertNames: map[string]int{}, ChangedByKind: map[string]int{}, EarlySignatures: []string{}, ObjectsPerDump: []int{}, KindsPerDump: []int{}}
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
	for _, table := range []struct{ file, status, text string }{{"otel_traces_raw.tsv", "StatusCode", "StatusMessage"}, {"otel_logs_raw.tsv", "SeverityText", "Body"}} {
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
	if err := st.dumps(filepath.Join(dir, "k8s_objects_raw.tsv")); err != nil && snap.Tables["k8s_objects_raw.tsv"] != nil {
		return nil, err
	}
	return st, nil
}

// dumps splits the objects table into dumps (rows within a minute of a dump's first) and
// compares the first with the last.
func (st *Stats) dumps(path string) error {
	type dump struct {
		start  time.Time
		bodies map[string]string
		kinds  map[string]bool
	}
	var all []*dump
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		t, ok := r.Time("Timestamp")
		if !ok {
			return nil
		}
		if len(all) == 0 || t.Sub(all[len(all)-1].start) > time.Minute {
			all = append(all, &dump{start: t, bodies: map[string]string{}, kinds: map[string]bool{}})
		}
		var o struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Namespace, Name string
			} `json:"metadata"`
		}
		if json.Unmarshal([]byte(r.Get("Body")), &o) != nil || o.Kind == "" {
			return nil
		}
		d := all[len(all)-1]
		d.bodies[fmt.Sprintf("%s/%s/%s", o.Metadata.Namespace, o.Kind, o.Metadata.Name)] = r.Get("Body")
		d.kinds[o.Kind] = true
		return nil
	})
	if err != nil {
		return err
	}
	st.Dumps = len(all)
	for _, d := range all {
		st.ObjectsPerDump = append(st.ObjectsPerDump, len(d.bodies))
		st.KindsPerDump = append(st.KindsPerDump, len(d.kinds))
	}
	if len(all) < 2 {
		return nil
	}
	first, last := all[0].bodies, all[len(all)-1].bodies
	count := func(key string) {
		st.ChangedObjects++
		parts := strings.SplitN(key, "/", 3)
		st.ChangedByKind[parts[1]]++
	}
	for k, v := range first {
		if last[k] != v {
			count(k)
		}
	}
	for k := range last {
		if _, ok := first[k]; !ok {
			count(k)
		}
	}
	return nil
}
