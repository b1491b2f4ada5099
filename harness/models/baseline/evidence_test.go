package baseline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

// incident describes a small hand-made snapshot: two Deployments, alpha and beta, both
// edited during a 30-minute window (so the object dumps alone cannot tell them apart), with
// the logs of their pods and their pod and span metrics; no traces. Minutes are counted from the window's start.
type incident struct {
	logErrorsFrom map[string]int // service -> minute its ERROR lines begin
	restartsFrom  map[string]int // service -> minute its pod starts restarting
	memoryFrom    map[string]int // service -> minute its pod's memory triples
	cpuFrom       map[string]int // service -> minute its pod burns a core
	failingFrom   map[string]int // service -> minute its service metrics count failed calls
}

var incidentStart = time.Date(2025, 12, 1, 10, 0, 0, 123456789, time.UTC)

func stampAt(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05.000000000") }

func writeTSV(path string, header []string, rows [][]string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := snapshot.NewTSVWriter(f)
	for _, r := range append([][]string{header}, rows...) {
		if err := w.Write(r...); err != nil {
			return errors.Join(err, f.Close())
		}
	}
	return errors.Join(w.Flush(), f.Close())
}

// write lays the incident out as a snapshot folder.
func (in incident) write(dir string) error {
	pods := map[string]string{"alpha": "alpha-7d4b9c8f6-x2x9k", "beta": "beta-5f45f75855-j5sn9"}
	services := []string{"alpha", "beta"}
	var objects [][]string
	for i, at := range []time.Time{incidentStart.Add(10 * time.Second), incidentStart.Add(25*time.Minute + 10*time.Second)} {
		for j, svc := range services {
			body, _ := json.Marshal(map[string]any{"apiVersion": "apps/v1", "kind": "Deployment",
				"metadata": map[string]any{"name": svc, "namespace": "otel-demo", "uid": fmt.Sprintf("00000000-0000-4000-8000-00000000000%d", j),
					"resourceVersion": fmt.Sprint(100 + 10*i + j)},
				"spec": map[string]any{"replicas": 1, "template": map[string]any{"spec": map[string]any{"containers": []any{
					map[string]any{"name": svc, "image": fmt.Sprintf("ghcr.io/example/%s:1.%d", svc, i)}}}}}})
			t := at.Add(time.Duration(j) * time.Millisecond)
			objects = append(objects, []string{stampAt(t), t.Format("2006-01-02 15:04:05"), "", "", "0", "", "0", "", string(body), "",
				"{'k8s.namespace.name': 'otel-demo'}", "", "k8sobjectsreceiver", "1.0.0", "{}",
				"{'event.domain': 'k8s', 'k8s.resource.name': 'deployments'}", ""})
		}
	}
	if err := writeTSV(filepath.Join(dir, "k8s_objects_raw.tsv"), snapshot.Columns[snapshot.Objects], objects); err != nil {
		return err
	}
	var logs [][]string
	for s := 0; s < 30*60; s += 10 {
		t := incidentStart.Add(time.Duration(s) * time.Second)
		for _, svc := range services {
			severity, number, body := "INFO", "9", "request handled in 4ms"
			if from, ok := in.logErrorsFrom[svc]; ok && s >= from*60 && s%20 == 0 {
				severity, number, body = "ERROR", "17", "request failed: upstream connect error\n\tat handler"
			}
			logs = append(logs, []string{stampAt(t), t.Format("2006-01-02 15:04:05"), "", "", "1", severity, number, svc, body, "",
				fmt.Sprintf("{'k8s.namespace.name': 'otel-demo', 'k8s.pod.name': '%s', 'service.name': '%s'}", pods[svc], svc), "", "", "", "{}", "{}", ""})
		}
	}
	if err := writeTSV(filepath.Join(dir, "otel_logs_raw.tsv"), snapshot.Columns[snapshot.Logs], logs); err != nil {
		return err
	}
	for _, svc := range services {
		var rows [][]string
		cpu, restarts := 0.0, 0
		for m := 1; m < 30; m++ {
			t := incidentStart.Truncate(time.Minute).Add(time.Duration(m)*time.Minute + 2949*time.Millisecond)
			memory := 80e6 + float64(m%3)*1e6
			if from, ok := in.memoryFrom[svc]; ok && m >= from {
				memory *= 3
			}
			if from, ok := in.restartsFrom[svc]; ok && m >= from && (m-from)%2 == 0 {
				restarts++
			}
			burn := 0.02
			if from, ok := in.cpuFrom[svc]; ok && m >= from {
				burn = 1
			}
			cpu += burn * 60
			tags := fmt.Sprintf("{'container': '%s', 'namespace': 'otel-demo', 'pod': '%s'}", svc, pods[svc])
			for _, v := range []struct {
				name  string
				value float64
			}{{"container_cpu_usage_seconds_total", cpu}, {"container_memory_working_set_bytes", memory}, {"kube_pod_container_status_restarts_total", float64(restarts)}} {
				rows = append(rows, []string{v.name, t.Format("2006-01-02 15:04:05.000"), fmt.Sprintf("%.1f", v.value), pods[svc], "otel-demo", tags})
			}
		}
		if err := writeTSV(filepath.Join(dir, "metrics", "pod_"+pods[svc]+"_raw.tsv"), snapshot.Columns[snapshot.PodMetrics], rows); err != nil {
			return err
		}
		// Span metrics: calls counted by status, cumulative; the series of failed calls is
		// born with the first failure.
		rows = nil
		for m := 1; m < 30; m++ {
			t := incidentStart.Truncate(time.Minute).Add(time.Duration(m)*time.Minute + 2949*time.Millisecond)
			series := [][2]string{{"STATUS_CODE_UNSET", fmt.Sprintf("%d.0", 20*m)}}
			if from, ok := in.failingFrom[svc]; ok && m >= from {
				series = append(series, [2]string{"STATUS_CODE_ERROR", fmt.Sprintf("%d.0", 15*(m-from+1))})
			}
			for _, s := range series {
				tags := fmt.Sprintf("{'service_name': '%s', 'span_kind': 'SPAN_KIND_SERVER', 'span_name': 'GET /', 'status_code': '%s'}", svc, s[0])
				rows = append(rows, []string{"traces_span_metrics_calls_total", t.Format("2006-01-02 15:04:05.000"), s[1], svc, "otel-demo", "", tags, "calls", s[0]})
			}
		}
		if err := writeTSV(filepath.Join(dir, "metrics", "service_"+svc+"_raw.tsv"), snapshot.Columns[snapshot.ServiceMetrics], rows); err != nil {
			return err
		}
	}
	return nil
}

// investigationOutput is what investigate.py prints, with the symptoms it found and where.
type investigationOutput struct {
	finding
	Symptoms map[string]struct {
		Since   string   `json:"since"`
		Why     string   `json:"why"`
		Sources []string `json:"sources"`
	} `json:"symptoms"`
}

// investigate runs investigate.py alone in the sandbox over dir, as the baseline does.
func investigate(t *testing.T, dir string) investigationOutput {
	t.Helper()
	res, err := startSandbox(t, dir).Run(context.Background(), InvestigationCommand, time.Minute)
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("investigate.py: exit %d, %v\n%s", res.ExitCode, err, res.Stderr)
	}
	var out investigationOutput
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("%v: %s", err, res.Stdout)
	}
	return out
}

// TestLogsAndMetricsRankTheCandidates: alpha and beta both change during the incident and
// nothing else tells them apart; the ERROR lines of one service's logs, or one pod's
// restarts, memory or CPU, or one service's failed calls in the metrics make the change that
// acts on it the answer; which failed first, and in how many sources, ranks them.
func TestLogsAndMetricsRankTheCandidates(t *testing.T) {
	for _, c := range []struct {
		name     string
		in       incident
		want     []string
		symptom  string // the service that must show a symptom ("" for none)
		why      string
		source   string
		whyFirst string // a reason the first candidate must give
	}{
		{name: "nothing tells them apart", want: []string{"otel-demo/Deployment/alpha", "otel-demo/Deployment/beta"}},
		{name: "beta's logs turn to errors", in: incident{logErrorsFrom: map[string]int{"beta": 12}},
			want: []string{"otel-demo/Deployment/beta"}, symptom: "beta", why: "its logs turn to errors", source: "logs"},
		{name: "alpha's pod restarts", in: incident{restartsFrom: map[string]int{"alpha": 12}},
			want: []string{"otel-demo/Deployment/alpha"}, symptom: "alpha", why: "its pods restart", source: "metrics"},
		{name: "beta's memory climbs", in: incident{memoryFrom: map[string]int{"beta": 15}},
			want: []string{"otel-demo/Deployment/beta"}, symptom: "beta", why: "its memory climbs", source: "metrics"},
		{name: "alpha's CPU jumps", in: incident{cpuFrom: map[string]int{"alpha": 14}},
			want: []string{"otel-demo/Deployment/alpha"}, symptom: "alpha", why: "its CPU jumps", source: "metrics"},
		{name: "beta's calls fail in its span metrics", in: incident{failingFrom: map[string]int{"beta": 13}},
			want: []string{"otel-demo/Deployment/beta"}, symptom: "beta", why: "its metrics count failing calls", source: "metrics"},
		{name: "alpha's logs fail first", in: incident{logErrorsFrom: map[string]int{"alpha": 8, "beta": 16}},
			symptom: "alpha", why: "its logs turn to errors", source: "logs", whyFirst: "alpha failed first"},
		{name: "beta fails in logs and metrics", in: incident{logErrorsFrom: map[string]int{"alpha": 10, "beta": 10}, restartsFrom: map[string]int{"beta": 10}},
			symptom: "beta", source: "metrics", whyFirst: "that failure shows in logs and metrics"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "Scenario-1")
			if err := c.in.write(dir); err != nil {
				t.Fatal(err)
			}
			out := investigate(t, dir)
			if c.symptom == "" && len(out.Symptoms) > 0 {
				t.Errorf("symptoms %+v, none expected", out.Symptoms)
			}
			if c.symptom != "" {
				if s, ok := out.Symptoms[c.symptom]; !ok {
					t.Errorf("no symptom of %s among %+v", c.symptom, out.Symptoms)
				} else {
					if c.why != "" && s.Why != c.why {
						t.Errorf("%s's symptom says %q, want %q", c.symptom, s.Why, c.why)
					}
					if !slices.Contains(s.Sources, c.source) {
						t.Errorf("%s's symptom comes from %q, want %s among them", c.symptom, s.Sources, c.source)
					}
				}
			}
			if c.whyFirst != "" {
				if len(out.Candidates) == 0 || !strings.Contains(strings.Join(out.Candidates[0].Why, "; "), c.whyFirst) {
					t.Errorf("candidates %+v, the first should say %q", out.Candidates, c.whyFirst)
				}
			}
			if c.want != nil {
				if got := runBaseline(t, dir); !slices.Equal(got, c.want) {
					t.Errorf("answer %v, want %v (candidates %+v)", got, c.want, out.Candidates)
				}
			}
		})
	}
}
