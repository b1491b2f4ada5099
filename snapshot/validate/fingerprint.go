package validate

import (
	"fmt"
	"hash/fnv"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// maxFeatureText bounds the text of a message, a log line or a span status kept in a
// feature: their openings tell errors apart, and the bound keeps normalising cheap.
// maxRawText bounds it before the names are masked, so that a copy whose names are longer
// or shorter cuts its text at the same place.
const (
	maxFeatureText = 120
	maxRawText     = 4 * maxFeatureText
)

// onsetBucket is how finely an alert's first firing is placed after the first alerts file:
// coarse enough that a copy recorded again with a minute's jitter keeps its buckets.
const onsetBucket = 5 * time.Minute

// Fingerprint is what the model sees of a task, as features with weights: firing alerts and
// when each first fired after the task's first alerts file, Kubernetes events, objects that
// change between the first and the last dump, error spans, error log lines and the shapes of
// metric series (see shape). Every name of a workload, a service or a namespace in them is
// replaced by a slot standing for its entity, described by its role (see roles), and times,
// ids and numbers are masked (see normalise), so that a copy renamed and moved in time has
// the same fingerprint once its entities are matched with the original's. A feature's weight
// grows with the log of its count, so a copy given or stripped of a fifth of its lines keeps
// nearly the same weights.
type Fingerprint struct {
	Task     string
	Features map[string]float64
	shown    map[string]string // a feature in the task's own names, for people to read
	entities []entity          // by the slots the features name them by
}

// reading is what one pass over a task gathers: features that still carry the task's own
// names, and the structure its roles are drawn from.
type reading struct {
	counts     map[string]int
	calls      *snapshot.CallGraph
	named      map[string]bool           // services named by alerts or logs, which may have no object or span
	workloads  map[string]string         // workload name -> kind (Deployment, StatefulSet, DaemonSet)
	namespaces map[string][]string       // namespace -> its workloads
	ops        map[string]map[string]int // service -> the names of the spans it writes, counted
	images     map[string]map[string]bool
	series     map[string]*series // metric series, by what they measure
	alerts     map[string]time.Time
	firstAlert time.Time
}

// maxOps bounds the span names kept of a service: enough for a shop's operations, and a
// bound for spans named after what they fetch.
const maxOps = 200

// FingerprintTask reads the task folder dir in one streaming pass over each file.
func FingerprintTask(task, dir string) (*Fingerprint, error) {
	files, err := snapshot.Inventory(dir)
	if err != nil {
		return nil, err
	}
	rd := &reading{counts: map[string]int{}, calls: snapshot.NewCallGraph(), named: map[string]bool{},
		workloads: map[string]string{}, namespaces: map[string][]string{}, ops: map[string]map[string]int{},
		images: map[string]map[string]bool{}, series: map[string]*series{}, alerts: map[string]time.Time{}}
	for _, f := range files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		switch {
		case f.Alert:
			err = rd.alertFeatures(path)
		case f.Table == snapshot.Events:
			err = rd.eventFeatures(path)
		case f.Table == snapshot.Objects:
			err = rd.changeFeatures(path)
		case f.Table == snapshot.Traces:
			err = rd.spanFeatures(path)
		case f.Table == snapshot.Logs:
			err = rd.logFeatures(path)
		case f.Table == snapshot.PodMetrics || f.Table == snapshot.ServiceMetrics:
			err = rd.metricSeries(path)
		}
		if err != nil {
			return nil, fmt.Errorf("fingerprint of %s: %w", task, err)
		}
	}
	for a, t := range rd.alerts {
		rd.counts[fmt.Sprintf("alert onset +%dm %s", int(t.Sub(rd.firstAlert)/onsetBucket)*5, a)]++
	}
	rd.shapeFeatures()
	delete(rd.named, "")
	r := newRoles(rd)
	fp := &Fingerprint{Task: task, Features: make(map[string]float64, len(rd.counts)), shown: map[string]string{}}
	for k, n := range rd.counts {
		f := r.mask(k, maxFeatureText)
		fp.Features[f] += 1 + math.Log(float64(n))
		if was, ok := fp.shown[f]; !ok || k < was {
			fp.shown[f] = k
		}
	}
	r.touches(fp.Features)
	fp.entities = r.entities
	return fp, nil
}

func (rd *reading) alertFeatures(path string) error {
	af, err := snapshot.ReadAlertsFile(path)
	if err != nil {
		return err
	}
	if rd.firstAlert.IsZero() || af.Time.Before(rd.firstAlert) {
		rd.firstAlert = af.Time
	}
	for _, a := range af.Alerts {
		l := a.Labels
		rd.named[l["service_name"]], rd.named[l["deployment"]] = true, true
		rd.namespace(l["namespace"])
		key := strings.Join([]string{a.Name, l["severity"], normalise(l["namespace"]), normalise(l["service_name"]),
			normalise(l["pod"]), normalise(l["deployment"])}, " ")
		rd.counts["alert "+key]++
		if t, ok := rd.alerts[key]; !ok || af.Time.Before(t) {
			rd.alerts[key] = af.Time
		}
	}
	return nil
}

// namespace notes a namespace that alerts or events name, which a task with no object dump
// (or a fragment of one) knows of no other way.
func (rd *reading) namespace(ns string) {
	if _, known := rd.namespaces[ns]; ns != "" && !known {
		rd.namespaces[ns] = nil
	}
}

func (rd *reading) eventFeatures(path string) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		e, err := r.Event()
		if err == nil {
			rd.namespace(e.Regarding.Namespace)
			rd.counts[strings.Join([]string{"event", e.Type, e.Reason, e.Regarding.Kind, normalise(e.Regarding.Name),
				normalise(e.Message)}, " ")]++
		}
		return nil
	})
	return err
}

// workloadKinds are the objects whose names are the names the roles replace.
var workloadKinds = map[string]bool{"Deployment": true, "StatefulSet": true, "DaemonSet": true}

// changeFeatures names the objects added, removed or changed between the first and the last
// dump (rows within a minute of a dump's first), keeping only a hash of each body, and
// notes the workloads and their namespaces.
func (rd *reading) changeFeatures(path string) error {
	var first, current map[snapshot.ObjectRef]uint64
	var start time.Time
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		t, ok := r.Time("Timestamp")
		if !ok {
			return nil
		}
		if current == nil || t.Sub(start) > time.Minute {
			if first == nil {
				first = current
			}
			current, start = map[snapshot.ObjectRef]uint64{}, t
		}
		o, err := r.Object()
		if err != nil {
			return nil
		}
		if ref := o.Ref; workloadKinds[ref.Kind] && rd.workloads[ref.Name] == "" {
			rd.workloads[ref.Name] = ref.Kind
			rd.namespaces[ref.Namespace] = append(rd.namespaces[ref.Namespace], ref.Name)
			rd.images[ref.Name] = map[string]bool{}
			for _, image := range o.Body.Get("spec.template.spec.containers.#.image").Array() {
				rd.images[ref.Name][image.String()] = true
			}
		}
		h := fnv.New64a()
		_, _ = h.Write([]byte(normalise(o.Body.Get("spec").Raw))) // a hash's Write never fails
		current[o.Ref] = h.Sum64()
		return nil
	})
	if err != nil || first == nil {
		return err
	}
	for ref, h := range current {
		if was, ok := first[ref]; !ok || was != h {
			rd.counts["change "+ref.Kind+" "+normalise(ref.Namespace)+"/"+normalise(ref.Name)]++
		}
	}
	for ref := range first {
		if _, ok := current[ref]; !ok {
			rd.counts["gone "+ref.Kind+" "+normalise(ref.Namespace)+"/"+normalise(ref.Name)]++
		}
	}
	return nil
}

func (rd *reading) spanFeatures(path string) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		rd.calls.Add(r)
		service := r.Get("ServiceName")
		ops := rd.ops[service]
		if ops == nil {
			ops = map[string]int{}
			rd.ops[service] = ops
		}
		if op := r.Get("SpanName"); ops[op] > 0 || len(ops) < maxOps {
			ops[op]++
		}
		if strings.EqualFold(r.Get("StatusCode"), "Error") {
			rd.counts[strings.Join([]string{"span", normalise(r.Get("ServiceName")), normalise(r.Get("SpanName")),
				normalise(r.Get("StatusMessage"))}, " ")]++
		}
		return nil
	})
	return err
}

func (rd *reading) logFeatures(path string) error {
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		switch sev := strings.ToUpper(r.Get("SeverityText")); sev {
		case "ERROR", "FATAL", "CRITICAL", "WARN", "WARNING":
			rd.named[r.Get("ServiceName")] = true
			rd.counts[strings.Join([]string{"log", normalise(r.Get("ServiceName")), sev, normalise(r.Get("Body"))}, " ")]++
		}
		return nil
	})
	return err
}

// normalisers replace what differs between two recordings of the same incident: times,
// ids, addresses, generated name suffixes (Kubernetes' hashes use no vowels), numbers. A
// number within a word is kept, so that names such as "svc01" and "svc02" stay apart for
// roles to mask.
var normalisers = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`\d{4}-\d\d-\d\d[t _]\d\d[:-]\d\d[:-]\d\d(?:[.,]\d+)?z?`), "<time>"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "<uuid>"},
	{regexp.MustCompile(`\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+)?\b`), "<ip>"},
	{regexp.MustCompile(`-[bcdfghjklmnpqrstvwxz2-9]{5,10}\b`), "-<hash>"},
	{regexp.MustCompile(`\b[0-9a-f]{8,}\b`), "<hex>"},
	{regexp.MustCompile(`\b\d+(?:\.\d+)?`), "#"},
}

// normalise lowercases s, cuts it to maxRawText bytes and replaces what normalisers match.
func normalise(s string) string {
	if len(s) > maxRawText {
		s = s[:maxRawText]
	}
	s = strings.ToLower(s)
	for _, n := range normalisers {
		s = n.re.ReplaceAllString(s, n.with)
	}
	return s
}
