// Package naive holds three fault-agnostic solvers that know nothing about incidents: they
// name what the alert labels name, the service of the first ERROR log line, or every object
// that differs between the first and the last object dump. They measure how hard a task is:
// on tasks as messy as the real ones each should score close to nothing.
package naive

import (
	"path/filepath"
	"sort"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// Solver answers a task folder with entities (namespace/Kind/name).
type Solver struct {
	Name  string
	Solve func(dir string) ([]string, error)
}

// Solvers are the three naive solvers.
var Solvers = []Solver{{"alert-labels", AlertLabels}, {"first-error", FirstError}, {"dump-diff", DumpDiff}}

// labelKinds maps an alert label to the kind of object it names.
var labelKinds = map[string]string{"pod": "Pod", "deployment": "Deployment", "statefulset": "StatefulSet", "daemonset": "DaemonSet",
	"service_name": "Service", "horizontalpodautoscaler": "HorizontalPodAutoscaler", "resourcequota": "ResourceQuota"}

// AlertLabels names every object an alert label names, and every namespace.
func AlertLabels(dir string) ([]string, error) {
	files, err := filepath.Glob(filepath.Join(dir, "alerts", "*.json"))
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for _, path := range files {
		af, err := snapshot.ReadAlertsFile(path)
		if err != nil {
			return nil, err
		}
		for _, a := range af.Alerts {
			ns := a.Labels["namespace"]
			if ns == "" {
				continue
			}
			seen["Namespace/"+ns] = true
			for label, kind := range labelKinds {
				if v := a.Labels[label]; v != "" {
					seen[ns+"/"+kind+"/"+v] = true
				}
			}
		}
	}
	return sorted(seen), nil
}

// FirstError names the workload of the service that wrote the first ERROR log line.
func FirstError(dir string) ([]string, error) {
	var first string
	var at time.Time
	_, err := snapshot.ScanTable(filepath.Join(dir, "otel_logs_raw.tsv"), func(r snapshot.Row) error {
		if r.Get("SeverityText") != "ERROR" {
			return nil
		}
		if t, ok := r.Time("Timestamp"); ok && (first == "" || t.Before(at)) {
			first, at = r.Get("ServiceName"), t
		}
		return nil
	})
	if err != nil || first == "" {
		return nil, err
	}
	return []string{"otel-demo/Deployment/" + first}, nil
}

// DumpDiff names every object added, removed or changed between the first and the last
// object dump (a dump is the rows within a minute of its first).
func DumpDiff(dir string) ([]string, error) {
	dumps, err := snapshot.ReadObjectDumps(filepath.Join(dir, "k8s_objects_raw.tsv"))
	if err != nil || len(dumps) < 2 {
		return nil, err
	}
	seen := map[string]bool{}
	for _, ref := range snapshot.ChangedObjects(dumps[0], dumps[len(dumps)-1]) {
		seen[snapshot.EntityOf(ref)] = true
	}
	return sorted(seen), nil
}

func sorted(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
