package synth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// Options choose what Generate makes.
type Options struct {
	Fault string // one of Faults
	Seed  uint64
	Large bool // hundreds of MB of TSV, for benchmarks
}

// Result describes a generated task.
type Result struct {
	Dir       string
	Fault     string
	Victim    string
	RootCause string // the root-cause entity, namespace/Kind/name
}

// Generate writes a complete task folder at dir (which must not exist or be empty): the
// snapshot files in the real formats and ground_truth.yaml.
func Generate(dir string, opts Options) (*Result, error) {
	w := newWorld(opts.Seed, opts.Large)
	if err := w.pickFault(opts.Fault); err != nil {
		return nil, err
	}
	w.prepareRollout()
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty", dir)
	}
	if err := os.MkdirAll(filepath.Join(dir, "alerts"), 0o755); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "metrics"), 0o755); err != nil {
		return nil, err
	}
	steps := []func(string) error{w.writeObjects, w.writeEvents, w.writeAlerts, w.writeTelemetry}
	for _, step := range steps {
		if err := step(dir); err != nil {
			return nil, fmt.Errorf("generate %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, snapshot.GroundTruthFile), []byte(w.groundTruth()), 0o644); err != nil {
		return nil, err
	}
	ns := appNamespace
	if w.fault.kind == "partition" {
		ns = chaosNamespace
	}
	return &Result{Dir: dir, Fault: w.fault.kind, Victim: w.fault.victim, RootCause: ns + "/" + rootKinds[w.fault.kind] + "/" + w.fault.rootName()}, nil
}

// writeTable creates a TSV file with its header and lets fill write the rows.
func writeTable(path string, table snapshot.Table, fill func(*snapshot.TSVWriter) error) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, f.Close()) }()
	out := snapshot.NewTSVWriter(f)
	if err := out.Write(snapshot.Columns[table]...); err != nil {
		return err
	}
	if err := fill(out); err != nil {
		return err
	}
	return out.Flush()
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err) // only maps, slices and scalars are marshalled
	}
	return string(b)
}

// k8sRow writes a row of the events or objects table (the collector's log schema).
func k8sRow(out *snapshot.TSVWriter, t time.Time, namespace, name, resource string, body obj) error {
	return out.Write(stamp(t), t.Format("2006-01-02 15:04:05"), "", "", "0", "", "0", "", mustJSON(body), "",
		fmt.Sprintf("{'k8s.namespace.name': '%s'}", namespace), "",
		"github.com/open-telemetry/opentelemetry-collector-contrib/receiver/k8sobjectsreceiver", "1.0.0", "{}",
		fmt.Sprintf("{'event.domain': 'k8s', 'event.name': '%s', 'k8s.resource.name': '%s'}", name, resource), "")
}

// writeObjects writes a full dump of the cluster every 5 minutes.
func (w *world) writeObjects(dir string) error {
	return writeTable(filepath.Join(dir, "k8s_objects_raw.tsv"), snapshot.Objects, func(out *snapshot.TSVWriter) error {
		for t := w.start; t.Before(w.end); t = t.Add(5 * time.Minute) {
			for i, o := range w.objectsAt(t) {
				m := o["metadata"].(obj)
				ns, _ := m["namespace"].(string)
				kind := o["kind"].(string)
				if err := k8sRow(out, t.Add(time.Duration(i)*time.Millisecond), ns, m["name"].(string), resourceName(kind), o); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// resourceName is the API resource of a kind (Pod -> pods).
func resourceName(kind string) string {
	switch kind {
	case "NetworkPolicy":
		return "networkpolicies"
	case "NetworkChaos":
		return "networkchaos"
	case "Endpoints":
		return "endpoints"
	}
	return lower(kind) + "s"
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

func (w *world) writeEvents(dir string) error {
	return writeTable(filepath.Join(dir, "k8s_events_raw.tsv"), snapshot.Events, func(out *snapshot.TSVWriter) error {
		for i, e := range w.events() {
			ns := e.namespace
			if ns == "" {
				ns = "default"
			}
			if err := k8sRow(out, e.at, ns, e.name, "events", w.eventBody(e, i)); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeAlerts writes the firing alerts once a minute, named as the recorder names them.
func (w *world) writeAlerts(dir string) error {
	for t := w.start.Add(time.Minute); t.Before(w.end); t = t.Add(time.Minute) {
		at := t.Add(time.Duration(w.rng.IntN(999999)) * time.Microsecond)
		name := "alerts_at_" + at.Format("2006-01-02T15-04-05.000000") + ".json"
		body, err := json.MarshalIndent(w.alertsAt(t), "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "alerts", name), body, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// writeTelemetry writes traces and logs, then the metrics that count them.
func (w *world) writeTelemetry(dir string) error {
	traces, err := os.Create(filepath.Join(dir, "otel_traces_raw.tsv"))
	if err != nil {
		return err
	}
	defer traces.Close()
	logs, err := os.Create(filepath.Join(dir, "otel_logs_raw.tsv"))
	if err != nil {
		return err
	}
	defer logs.Close()
	tm := &telemetry{w: w, traces: snapshot.NewTSVWriter(traces), logs: snapshot.NewTSVWriter(logs), counts: map[string]map[int64]*minuteCounts{}}
	if err := tm.traces.Write(snapshot.Columns[snapshot.Traces]...); err != nil {
		return err
	}
	if err := tm.logs.Write(snapshot.Columns[snapshot.Logs]...); err != nil {
		return err
	}
	if err := tm.run(); err != nil {
		return err
	}
	if err := errors.Join(tm.traces.Flush(), tm.logs.Flush(), traces.Close(), logs.Close()); err != nil {
		return err
	}
	for _, s := range w.services {
		if err := writeTable(filepath.Join(dir, "metrics", "service_"+s.name+"_raw.tsv"), snapshot.ServiceMetrics, func(out *snapshot.TSVWriter) error {
			return tm.writeServiceMetrics(out, s)
		}); err != nil {
			return err
		}
		pods := append([]pod(nil), s.pods...)
		pods = append(pods, w.rolloutPodsOf(s)...)
		for _, p := range pods {
			if err := writeTable(filepath.Join(dir, "metrics", "pod_"+p.name+"_raw.tsv"), snapshot.PodMetrics, func(out *snapshot.TSVWriter) error {
				return w.writePodMetrics(out, s, p)
			}); err != nil {
				return err
			}
		}
	}
	return nil
}

// rolloutPodsOf lists the pods a fault's rollout created for s.
func (w *world) rolloutPodsOf(s *service) []pod {
	if s.name != w.fault.victim {
		return nil
	}
	return w.rollout.pods
}
