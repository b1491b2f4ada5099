// Package naive holds three fault-agnostic solvers that know nothing about incidents: they
// name what the alert labels name, the service of the first ERROR log line, or every object
// that differs between the first and the last object dump. They measure how hard a task is:
// on tasks as messy as the real ones each should score close to nothing.
package naive

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/snapshot"
)

// Answer is one entity a solver names, with the evidence it keyed on: what a task author reads
// to see what gave the answer away.
type Answer struct {
	Entity   string `json:"entity"`
	Evidence string `json:"evidence"`
}

// Entities are the entities of answers, in order.
func Entities(answers []Answer) []string {
	out := make([]string, len(answers))
	for i, a := range answers {
		out[i] = a.Entity
	}
	return out
}

// Solver answers a task folder.
type Solver struct {
	Name  string
	Solve func(dir string) ([]Answer, error)
}

// Solvers are the three naive solvers.
var Solvers = []Solver{{"alert-labels", AlertLabels}, {"first-error", FirstError}, {"dump-diff", DumpDiff}}

// labelKinds maps an alert label to the kind of object it names.
var labelKinds = map[string]string{"pod": "Pod", "deployment": "Deployment", "statefulset": "StatefulSet",
	"daemonset": "DaemonSet", "service_name": "Service", "horizontalpodautoscaler": "HorizontalPodAutoscaler",
	"resourcequota": "ResourceQuota"}

// AlertLabels names every object an alert label names, and every namespace, each with the
// first alert that named it.
func AlertLabels(dir string) ([]Answer, error) {
	files, err := filepath.Glob(filepath.Join(dir, "alerts", "*.json"))
	if err != nil {
		return nil, err
	}
	seen := map[string]string{}
	name := func(entity, evidence string) {
		if _, ok := seen[entity]; !ok {
			seen[entity] = evidence
		}
	}
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
			where := fmt.Sprintf("alert %s in alerts/%s", a.Name, filepath.Base(path))
			name("Namespace/"+ns, where+", label namespace="+ns)
			for label, kind := range labelKinds {
				if v := a.Labels[label]; v != "" {
					name(ns+"/"+kind+"/"+v, where+", label "+label+"="+v)
				}
			}
		}
	}
	return sorted(seen), nil
}

// FirstError names the workload of the service that wrote the first ERROR log line.
func FirstError(dir string) ([]Answer, error) {
	var first, body string
	var at time.Time
	line := 0
	_, err := snapshot.ScanTable(filepath.Join(dir, "otel_logs_raw.tsv"), func(r snapshot.Row) error {
		if r.Get("SeverityText") != "ERROR" {
			return nil
		}
		if t, ok := r.Time("Timestamp"); ok && (first == "" || t.Before(at)) {
			first, at, body, line = r.Get("ServiceName"), t, r.Get("Body"), r.Line
		}
		return nil
	})
	if err != nil || first == "" {
		return nil, err
	}
	return []Answer{{"otel-demo/Deployment/" + first,
		fmt.Sprintf("otel_logs_raw.tsv line %d, the first ERROR line, of %s: %s", line, first, clip(body))}}, nil
}

// DumpDiff names every object added, removed or changed between the first and the last
// object dump (a dump is the rows within a minute of its first).
func DumpDiff(dir string) ([]Answer, error) {
	dumps, err := snapshot.ReadObjectDumps(filepath.Join(dir, "k8s_objects_raw.tsv"))
	if err != nil || len(dumps) < 2 {
		return nil, err
	}
	first, last := dumps[0], dumps[len(dumps)-1]
	seen := map[string]string{}
	for _, ref := range snapshot.ChangedObjects(first, last) {
		how := "changed"
		if _, ok := first.Bodies[ref]; !ok {
			how = "added"
		} else if _, ok := last.Bodies[ref]; !ok {
			how = "removed"
		}
		seen[snapshot.EntityOf(ref)] = fmt.Sprintf("k8s_objects_raw.tsv: %s between the dumps of %s and %s", how,
			first.Start.Format(time.DateTime), last.Start.Format(time.DateTime))
	}
	return sorted(seen), nil
}

// sorted lists the answers of a map of entities to evidence, by entity.
func sorted(evidence map[string]string) []Answer {
	out := make([]Answer, 0, len(evidence))
	for k, v := range evidence {
		out = append(out, Answer{k, v})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Entity < out[j].Entity })
	return out
}

// clip keeps the opening of a log line, enough to recognise it.
func clip(s string) string {
	const keep = 160
	if len(s) <= keep {
		return s
	}
	for i := keep; i > keep-4; i-- {
		if utf8.RuneStart(s[i]) {
			return s[:i] + "…"
		}
	}
	return s[:keep] + "…"
}
