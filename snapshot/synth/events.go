package synth

import (
	"fmt"
	"path/filepath"
	"sort"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// event is one Kubernetes Event, or one update of a recurring one.
type event struct {
	at         time.Time
	first      time.Time // when the event was first seen (zero: at)
	count      int       // how many times it happened so far (0: once)
	kind       string    // of the object it regards
	apiVersion string    // of the object it regards ("" for v1)
	namespace  string
	name       string
	typ        string // Normal or Warning
	reason     string
	note       string
	reporter   string
}

// recurring adds a recurring event to the fault's trail: one Event object whose count grows
// every period, as the API server aggregates repeats.
func (w *world) recurring(f *fault, base event, from time.Time, every time.Duration) {
	f.events = append(f.events, w.repeat(base, from, every)...)
}

func (w *world) repeat(base event, from time.Time, every time.Duration) []event {
	var out []event
	n := 0
	for t := from; t.Before(w.end); t = t.Add(every + time.Duration(w.rng.IntN(int(every/5)+1))) {
		n++
		e := base
		e.at, e.first, e.count = t, from, n
		out = append(out, e)
	}
	return out
}

// rolloutEvents are the controllers' events when a Deployment moves to revision r.
func (w *world) rolloutEvents(s *service, r *revision) []event {
	prev := s.revisions[0]
	for _, q := range s.revisions {
		if q == r {
			break
		}
		prev = q
	}
	at := r.at
	out := []event{scaled(at, s, fmt.Sprintf("Scaled up replica set %s-%s from 0 to %d", s.name, r.hash,
		max(1, s.replicas)))}
	for _, p := range r.pods {
		out = append(out,
			event{at: p.started.Add(-time.Second), kind: "ReplicaSet", apiVersion: "apps/v1", namespace: s.namespace,
				name: s.name + "-" + r.hash, typ: "Normal", reason: "SuccessfulCreate", note: "Created pod: " + p.name,
				reporter: "replicaset-controller"},
			event{at: p.started, kind: "Pod", namespace: s.namespace, name: p.name, typ: "Normal", reason: "Scheduled",
				note: fmt.Sprintf("Successfully assigned %s/%s to %s", s.namespace, p.name, p.node), reporter: "default-scheduler"})
	}
	for _, p := range prev.pods {
		if p.hash == r.hash {
			continue
		}
		out = append(out, event{at: at.Add(3 * time.Second), kind: "Pod", namespace: s.namespace, name: p.name, typ: "Normal",
			reason: "Killing", note: "Stopping container " + s.name, reporter: "kubelet"},
			event{at: at.Add(2 * time.Second), kind: "ReplicaSet", apiVersion: "apps/v1", namespace: s.namespace,
				name: s.name + "-" + prev.hash, typ: "Normal", reason: "SuccessfulDelete", note: "Deleted pod: " + p.name,
				reporter: "replicaset-controller"})
	}
	if len(prev.pods) > 0 && prev.hash != r.hash {
		out = append(out, scaled(at.Add(2*time.Second), s, fmt.Sprintf("Scaled down replica set %s-%s from %d to 0",
			s.name, prev.hash, len(prev.pods))))
	}
	return out
}

// startEvents are the kubelet's events for a pod whose container starts normally.
func startEvents(s *service, p pod, image string) []event {
	at := p.started.Add(2 * time.Second)
	ev := func(d time.Duration, reason, note string) event {
		return event{at: at.Add(d), kind: "Pod", namespace: s.namespace, name: p.name, typ: "Normal", reason: reason,
			note: note, reporter: "kubelet"}
	}
	return []event{ev(0, "Pulled", fmt.Sprintf("Container image %q already present on machine", image)),
		ev(time.Second, "Created",
			"Created container: "+s.name), ev(time.Second+300*time.Millisecond, "Started", "Started container "+s.name)}
}

// allEvents gathers the noise's and the faults' events, in time order, inside the window.
func (w *world) allEvents() []event {
	out := w.noiseEvents()
	for _, f := range w.faults {
		out = append(out, f.events...)
	}
	kept := out[:0]
	for _, e := range out {
		if !e.at.Before(w.start) && e.at.Before(w.end) {
			kept = append(kept, e)
		}
	}
	sort.SliceStable(kept, func(i, j int) bool { return kept[i].at.Before(kept[j].at) })
	return kept
}

// writeEvents writes every event twice, as the collector records it: once as an
// events.k8s.io/v1 Event (regarding, note), once as a core v1 Event (involvedObject,
// message), 30 ns apart.
func (w *world) writeEvents(dir string) error {
	return writeTable(filepath.Join(dir, "k8s_events_raw.tsv"), snapshot.Events, func(out *snapshot.TSVWriter) error {
		var last time.Time // the last row's time: the collector sees one watch event after another
		for _, e := range w.allEvents() {
			ns := e.namespace
			if ns == "" {
				ns = "default"
			}
			first := e.first
			if first.IsZero() {
				first = e.at
			}
			name := fmt.Sprintf("%s.%016x", e.name, first.UnixNano()&0x7fffffffffffffff)
			at := e.at
			if !at.After(last) {
				at = last.Add(417 * time.Microsecond) // events of the same second, seen in turn
			}
			for i, body := range w.eventBodies(e, ns, name) {
				last = at.Add(time.Duration(i*30) * time.Nanosecond)
				if err := k8sRow(out, last, ns, name, "events", body); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// eventBodies are the two watch events of one Event.
func (w *world) eventBodies(e event, ns, name string) [2]obj {
	count := max(e.count, 1)
	first := e.first
	if first.IsZero() {
		first = e.at
	}
	apiVersion := e.apiVersion
	if apiVersion == "" {
		apiVersion = "v1"
	}
	regarding := obj{"apiVersion": apiVersion, "kind": e.kind, "name": e.name,
		"uid": w.uidFor(e.kind, e.namespace, e.name), "resourceVersion": fmt.Sprint(w.rv.base + int64(len(e.name))*911)}
	if e.namespace != "" {
		regarding["namespace"] = e.namespace
	}
	managed := []any{
		obj{
			"apiVersion": "v1",
			"fieldsType": "FieldsV1",
			"manager":    e.reporter,
			"operation":  "Update",
			"time":       ts(e.at),
			"fieldsV1": obj{"f:count": obj{}, "f:firstTimestamp": obj{}, "f:involvedObject": obj{}, "f:lastTimestamp": obj{},
				"f:message": obj{}, "f:reason": obj{}, "f:reportingComponent": obj{}, "f:source": obj{"f:component": obj{}},
				"f:type": obj{}},
		},
	}
	metadata := obj{"name": name, "namespace": ns, "creationTimestamp": ts(first), "uid": w.uidFor("Event", ns, name),
		"resourceVersion": fmt.Sprint(w.rv.bump()), "managedFields": managed}
	typ := "ADDED"
	if count > 1 {
		typ = "MODIFIED"
	}
	modern := obj{"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": nil, "metadata": metadata,
		"reason": e.reason, "note": e.note, "type": e.typ, "regarding": regarding, "reportingController": e.reporter,
		"deprecatedCount": count, "deprecatedFirstTimestamp": ts(first), "deprecatedLastTimestamp": ts(e.at),
		"deprecatedSource": obj{"component": e.reporter}}
	core := obj{
		"apiVersion":         "v1",
		"kind":               "Event",
		"eventTime":          nil,
		"metadata":           metadata,
		"reason":             e.reason,
		"message":            e.note,
		"type":               e.typ,
		"involvedObject":     regarding,
		"reportingComponent": e.reporter,
		"reportingInstance":  "",
		"count":              count,
		"firstTimestamp":     ts(first),
		"lastTimestamp":      ts(e.at),
		"source":             obj{"component": e.reporter},
	}
	return [2]obj{{"type": typ, "object": modern}, {"type": typ, "object": core}}
}

// scaled is the deployment controller's event of s scaling one of its replica sets, told by note.
func scaled(at time.Time, s *service, note string) event {
	return event{at: at, kind: "Deployment", apiVersion: "apps/v1", namespace: s.namespace, name: s.name,
		typ: "Normal", reason: "ScalingReplicaSet", note: note, reporter: "deployment-controller"}
}
