package synth

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/snapshot"
)

// Options choose what Generate makes.
type Options struct {
	Fault string // one of Faults, two joined by "+", or "" for the seed's pick from the real mix
	Seed  uint64
	Large bool // hundreds of MB of TSV, for benchmarks
}

// Result describes a generated task.
type Result struct {
	Dir        string
	Fault      string   // the kinds injected, joined by "+"
	Victims    []string // the first service each fault strikes
	RootCauses []string // the root-cause entities, namespace/Kind/name
}

// Generate writes a complete task folder at dir (which must not exist or be empty): the
// snapshot files in the real formats and ground_truth.yaml.
func Generate(dir string, opts Options) (*Result, error) {
	spec := opts.Fault
	if spec == "" {
		spec = KindForSeed(opts.Seed)
	}
	kinds, err := ParseFault(spec)
	if err != nil {
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, fmt.Errorf("%s is not empty", dir)
	}
	w := newWorld(opts.Seed, opts.Large)
	res := &Result{Dir: dir, Fault: spec}
	var taken []string
	for _, kind := range kinds {
		f := w.inject(kind, taken)
		w.faults = append(w.faults, f)
		taken = append(taken, f.victim)
		taken = append(taken, w.upstream(f.victim)...)
		res.Victims = append(res.Victims, f.victim)
		res.RootCauses = append(res.RootCauses, f.rootEntity())
	}
	w.prepareNoise()
	for _, sub := range []string{"alerts", "metrics"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, err
		}
	}
	steps := []func(string) error{w.writeTelemetry, w.writeObjects, w.writeEvents, w.writeAlerts}
	for _, step := range steps {
		if err := step(dir); err != nil {
			return nil, fmt.Errorf("generate %s: %w", dir, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, data.GroundTruthFile), []byte(w.groundTruth()), 0o644); err != nil {
		return nil, err
	}
	return res, nil
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

// writeTelemetry writes traces and logs, then the metrics that count them.
func (w *world) writeTelemetry(dir string) (err error) {
	traces, err := os.Create(filepath.Join(dir, "otel_traces_raw.tsv"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, traces.Close()) }()
	logs, err := os.Create(filepath.Join(dir, "otel_logs_raw.tsv"))
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, logs.Close()) }()
	tm := &telemetry{w: w, traces: snapshot.NewTSVWriter(traces), logs: snapshot.NewTSVWriter(logs)}
	if err := tm.traces.Write(snapshot.Columns[snapshot.Traces]...); err != nil {
		return err
	}
	if err := tm.logs.Write(snapshot.Columns[snapshot.Logs]...); err != nil {
		return err
	}
	if err := tm.run(); err != nil {
		return err
	}
	if err := errors.Join(tm.traces.Flush(), tm.logs.Flush()); err != nil {
		return err
	}
	for _, s := range w.metricServices() {
		if len(w.counts[s.name]) == 0 {
			continue // no span, no series: Prometheus has nothing to give
		}
		if err := writeTable(filepath.Join(dir, "metrics", "service_"+s.name+"_raw.tsv"), snapshot.ServiceMetrics,
			func(out *snapshot.TSVWriter) error {
				return w.writeServiceMetrics(out, s)
			}); err != nil {
			return err
		}
	}
	for _, s := range w.services {
		if s.namespace != appNamespace {
			continue
		}
		for _, p := range w.podsEver(s) {
			if !w.scraped(s, p) {
				continue
			}
			if err := writeTable(filepath.Join(dir, "metrics", "pod_"+p.name+"_raw.tsv"), snapshot.PodMetrics,
				func(out *snapshot.TSVWriter) error {
					return w.writePodMetrics(out, s, p)
				}); err != nil {
				return err
			}
		}
	}
	return nil
}
