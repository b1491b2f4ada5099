package synth

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// metricServices are the services with a service metrics file: those whose spans the span
// metrics connector sees, as in the real snapshots.
func (w *world) metricServices() []*service {
	var out []*service
	for _, s := range w.services {
		if s.namespace == appNamespace && s.traced && s.name != "flagd" && s.name != "load-generator" {
			out = append(out, s)
		}
	}
	return out
}

// scrapes are the times Prometheus scraped the collector: once a minute.
func (w *world) scrapes() []time.Time {
	var out []time.Time
	offset := time.Duration(w.start.Unix()%60)*time.Second + 949*time.Millisecond
	for t := w.start.Truncate(time.Minute).Add(time.Minute + offset); t.Before(w.end); t = t.Add(time.Minute) {
		out = append(out, t)
	}
	return out
}

// writeServiceMetrics writes one service's span metrics: call counters and duration
// histogram buckets, cumulative, one scrape a minute, with the real label set.
func (w *world) writeServiceMetrics(out *snapshot.TSVWriter, s *service) error {
	collector := podsOf(w.byName["otel-collector"], w.start)[0]
	instance := w.uidFor("instance", appNamespace, s.name)
	calls := map[series]int{}
	hist := map[series][]int{}
	for _, t := range w.scrapes() {
		for minute := (t.Unix() / 60) - 1; minute < t.Unix()/60; minute++ {
			c := w.counts[s.name][minute]
			if c == nil {
				continue
			}
			for k, n := range c.calls {
				calls[k] += n
				if hist[k] == nil {
					hist[k] = make([]int, len(buckets)+1)
				}
				for i, v := range c.hist[k] {
					hist[k][i] += v
				}
			}
		}
		keys := make([]series, 0, len(calls))
		for k := range calls {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return keys[i].name+keys[i].status < keys[j].name+keys[j].status })
		for _, k := range keys {
			tags := map[string]string{
				"container":          "opentelemetry-collector",
				"endpoint":           "demo-metrics",
				"exported_instance":  instance,
				"exported_job":       "opentelemetry-demo/" + s.name,
				"exported_namespace": appNamespace,
				"instance":           collector.ip + ":8889",
				"job":                "otel-collector",
				"namespace":          appNamespace,
				"otel_scope_name":    "spanmetricsconnector",
				"pod":                collector.name,
				"prometheus":         "prometheus/prometheus-kube-prometheus-prometheus",
				"prometheus_replica": "prometheus-prometheus-kube-prometheus-prometheus-0",
				"service":            "otel-collector",
				"service_name":       s.name,
				"span_kind":          k.kind,
				"span_name":          k.name,
				"status_code":        k.status,
			}
			if err := out.Write("traces_span_metrics_calls_total", metricStamp(t), float(float64(calls[k])), s.name,
				appNamespace, "", pyDict(tags), "calls", k.status); err != nil {
				return err
			}
			cum := 0
			for i, n := range hist[k] {
				cum += n
				le := "+Inf"
				if i < len(buckets) {
					le = float(buckets[i])
				}
				tags["le"] = le
				if err := out.Write("traces_span_metrics_duration_milliseconds_bucket", metricStamp(t), float(float64(cum)), s.name,
					appNamespace, le, pyDict(tags), "duration_p95", ""); err != nil {
					return err
				}
			}
			delete(tags, "le")
		}
	}
	return nil
}

// float writes a number as pandas writes a float column: always with a decimal point.
func float(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}

// podsEver lists every pod a shop service ran during the window.
func (w *world) podsEver(s *service) []pod {
	var out []pod
	for _, r := range s.revisions {
		for _, p := range r.pods {
			if !slices.ContainsFunc(out, func(q pod) bool { return q.name == p.name }) {
				out = append(out, p)
			}
		}
	}
	return out
}

// scraped reports whether a pod was running at any scrape.
func (w *world) scraped(s *service, p pod) bool {
	for _, t := range w.scrapes() {
		if slices.ContainsFunc(podsOf(s, t), func(q pod) bool { return q.name == p.name }) {
			return true
		}
	}
	return false
}

// writePodMetrics writes one pod's CPU, memory and restarts, one sample a minute while it
// exists.
func (w *world) writePodMetrics(out *snapshot.TSVWriter, s *service, p pod) error {
	var cpu float64
	base := 60e6 + float64(len(s.name))*9e6
	for _, t := range w.scrapes() {
		if !slices.ContainsFunc(podsOf(s, t), func(q pod) bool { return q.name == p.name }) {
			continue
		}
		rate := 0.004 + w.rng.Float64()*0.03
		memory := base + w.rng.Float64()*15e6
		restarts := 0.0
		if s.name == "kafka" {
			restarts = float64(1 + len(p.uid)%3)
		}
		for _, f := range w.faults {
			for _, tr := range f.troubles {
				if tr.service != s.name || t.Before(tr.from) {
					continue
				}
				grow := min(1, t.Sub(tr.from).Minutes()/8)
				if tr.cpu > 0 {
					rate = tr.cpu * (0.9 + w.rng.Float64()*0.1)
				}
				if tr.memory > 0 {
					memory = base + tr.memory*grow
				}
				if tr.reason == "CrashLoopBackOff" {
					memory = 15e6 + float64(t.Sub(tr.from)%(90*time.Second))/float64(90*time.Second)*30e6
					restarts = float64(int(t.Sub(tr.from)/(90*time.Second)) + 1)
				}
			}
		}
		cpu += rate * 60
		tags := pyDict(
			map[string]string{"container": s.name, "endpoint": "https-metrics", "instance": w.nodeIP(p.node) + ":10250",
				"job": "kubelet", "metrics_path": "/metrics/cadvisor", "namespace": appNamespace, "node": p.node, "pod": p.name,
				"service": "prometheus-kube-prometheus-kubelet"})
		for _, m := range []struct {
			name  string
			value float64
		}{{"container_cpu_usage_seconds_total", cpu}, {"container_memory_working_set_bytes", float64(int64(memory))},
			{"kube_pod_container_status_restarts_total", restarts}} {
			if err := out.Write(m.name, metricStamp(t), float(roundTo(m.value, 6)), p.name, appNamespace, tags); err != nil {
				return err
			}
		}
	}
	return nil
}

func roundTo(v float64, digits int) float64 {
	f, _ := strconv.ParseFloat(fmt.Sprintf("%.*f", digits, v), 64)
	return f
}
