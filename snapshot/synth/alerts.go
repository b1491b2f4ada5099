package synth

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"time"
)

// alert is one firing Prometheus alert.
type alert struct {
	labels                        map[string]string
	description, runbook, summary string
	activeAt                      time.Time
	value                         float64
}

// alertJSON is an alert as alerts_at_* files hold it: the recorder's key order.
type alertJSON struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	State       string            `json:"state"`
	ActiveAt    string            `json:"activeAt"`
	Value       string            `json:"value"`
}

// apiAlertJSON is an alert as the Prometheus API returns it (alerts_in_alerting_state_*):
// keys sorted.
type apiAlertJSON struct {
	ActiveAt    string            `json:"activeAt"`
	Annotations map[string]string `json:"annotations"`
	Labels      map[string]string `json:"labels"`
	State       string            `json:"state"`
	Value       string            `json:"value"`
}

func (a alert) annotations() map[string]string {
	m := map[string]string{"description": a.description}
	if a.runbook != "" {
		m["runbook_url"] = a.runbook
	}
	if a.summary != "" {
		m["summary"] = a.summary
	}
	return m
}

// promValue and promFloat write a sample value as Prometheus does in the value field and as
// its templates print it in descriptions.
func promValue(v float64) string { return strconv.FormatFloat(v, 'e', -1, 64) }
func promFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

func activeAt(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000000000Z") }

// errorWindow is a service's server calls and errors in the two minutes before t.
func (w *world) errorWindow(service string, t time.Time) (errors, total int) {
	for m := t.Add(-2*time.Minute).Unix() / 60; m < t.Unix()/60; m++ {
		if c := w.counts[service][m]; c != nil {
			for k, n := range c.calls {
				total += n
				if k.status == "STATUS_CODE_ERROR" {
					errors += n
				}
			}
		}
	}
	return errors, total
}

// requestErrorAlerts are the demo's RequestErrorRate alerts at t: every service with a
// failed server call in the last two minutes, active since its current run of errors began.
func (w *world) requestErrorAlerts(t time.Time) []alert {
	var out []alert
	for _, s := range w.metricServices() {
		errs, total := w.errorWindow(s.name, t)
		if errs == 0 {
			continue
		}
		since := t
		for {
			e, _ := w.errorWindow(s.name, since.Add(-time.Minute))
			if e == 0 || since.Before(w.start) {
				break
			}
			since = since.Add(-time.Minute)
		}
		v := float64(errs) / float64(total)
		out = append(out, alert{
			labels: map[string]string{"alertname": "RequestErrorRate", "namespace": appNamespace, "service_name": s.name,
				"severity": "warning"},
			activeAt: since.Add(-time.Duration(len(s.name)) * 1234567 * time.Nanosecond).Add(488970782 * time.Nanosecond),
			value:    v,
			description: fmt.Sprintf("Request error rate in service %s in namespace %s is above 0 (current: %s)", s.name,
				appNamespace, promFloat(v)),
		})
	}
	return out
}

// kubeAlerts are kube-prometheus' alerts on the shop's workloads at t: pods not ready,
// crash-looping or throttled for 15 minutes, deployments short of replicas.
func (w *world) kubeAlerts(t time.Time) []alert {
	var out []alert
	const hold = 15 * time.Minute
	for _, f := range w.faults {
		for _, tr := range f.troubles {
			s := w.byName[tr.service]
			if t.Sub(tr.from) < hold {
				continue
			}
			since := tr.from.Add(hold).Add(-time.Duration(s.port%60) * time.Second)
			ksm := map[string]string{"container": "kube-state-metrics", "endpoint": "http", "job": "kube-state-metrics",
				"namespace": appNamespace, "service": "prometheus-kube-state-metrics", "severity": "warning"}
			with := func(extra map[string]string) map[string]string {
				m := map[string]string{}
				for k, v := range ksm {
					m[k] = v
				}
				for k, v := range extra {
					m[k] = v
				}
				return m
			}
			for _, p := range podsOf(s, t) {
				switch tr.reason {
				case "CrashLoopBackOff":
					out = append(out, alert{
						labels: with(map[string]string{"alertname": "KubePodCrashLooping", "container": s.name, "pod": p.name,
							"reason": "CrashLoopBackOff"}),
						activeAt: since,
						value:    1,
						description: fmt.Sprintf("Pod %s/%s (%s) is in waiting state (reason: \"CrashLoopBackOff\") on cluster .",
							appNamespace, p.name, s.name),
						runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodcrashlooping",
						summary: "Pod is crash looping.",
					})
				case "ImagePullBackOff", "Pending", "NotReady":
					out = append(out, alert{labels: with(map[string]string{"alertname": "KubePodNotReady", "pod": p.name}),
						activeAt: since, value: 1, description: fmt.Sprintf("Pod %s/%s has been in a non-ready state for longer than "+
							"15 minutes on cluster .", appNamespace, p.name),
						runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubepodnotready",
						summary: "Pod has been in a non-ready state for more than 15 minutes."})
				case "":
					if tr.cpu > 0.4 {
						out = append(out, alert{
							labels: map[string]string{"alertname": "CPUThrottlingHigh", "container": s.name, "namespace": appNamespace,
								"pod": p.name, "severity": "info"},
							activeAt: since,
							value:    0.45 + float64(s.port%40)/100,
							description: fmt.Sprintf("%d%% throttling of CPU in namespace %s for container %s in pod %s on cluster .",
								45+s.port%40, appNamespace, s.name, p.name),
							runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/cputhrottlinghigh",
							summary: "Processes experience elevated CPU throttling.",
						})
					}
				}
			}
			if tr.reason != "" && s.kind == "Deployment" {
				out = append(out, alert{
					labels:   with(map[string]string{"alertname": "KubeDeploymentReplicasMismatch", "deployment": s.name}),
					activeAt: since,
					value:    1,
					description: fmt.Sprintf(
						"Deployment %s/%s has not matched the expected number of replicas for longer than 15 minutes on cluster .",
						appNamespace, s.name),
					runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubedeploymentreplicasmismatch",
					summary: "Deployment has not matched the expected number of replicas.",
				})
			}
		}
	}
	return out
}

// writeAlerts writes the firing alerts once a minute, named as the recorder names them, and
// one answer of the Prometheus alerts API.
func (w *world) writeAlerts(dir string) error {
	micros := 323000 + w.rng.IntN(5000)
	second := 10 + w.rng.IntN(50)
	var apiAt time.Time
	first := w.start.Truncate(time.Minute).Add(time.Minute + time.Duration(second)*time.Second)
	for t := first; t.Before(w.end); t = t.Add(time.Minute) {
		micros += w.rng.IntN(900)
		at := t.Add(time.Duration(micros) * time.Microsecond)
		list := []alertJSON{}
		alerts := append(append(w.noiseAlerts(at), w.requestErrorAlerts(at)...), w.kubeAlerts(at)...)
		for _, a := range alerts {
			list = append(list, alertJSON{Labels: a.labels, Annotations: a.annotations(), State: "firing",
				ActiveAt: activeAt(a.activeAt), Value: promValue(a.value)})
		}
		if err := writeJSON(filepath.Join(dir, "alerts", "alerts_at_"+at.Format("2006-01-02T15-04-05.000000")+".json"), list,
			false); err != nil {
			return err
		}
		if apiAt.IsZero() && t.After(w.start.Add(w.end.Sub(w.start)*2/3)) {
			apiAt = at.Add(34*time.Second + 575*time.Millisecond)
		}
	}
	var api []apiAlertJSON
	for _, a := range w.requestErrorAlerts(apiAt) {
		api = append(api, apiAlertJSON{ActiveAt: activeAt(a.activeAt), Annotations: a.annotations(), Labels: a.labels,
			State: "firing", Value: promValue(a.value)})
	}
	sort.SliceStable(api, func(i, j int) bool { return api[i].ActiveAt < api[j].ActiveAt })
	if api == nil {
		api = []apiAlertJSON{}
	}
	doc := struct {
		Data struct {
			Alerts []apiAlertJSON `json:"alerts"`
		} `json:"data"`
		Status    string `json:"status"`
		Timestamp string `json:"timestamp"`
	}{Status: "success", Timestamp: apiAt.Truncate(time.Second).Format(time.RFC3339)}
	doc.Data.Alerts = api
	return writeJSON(
		filepath.Join(dir, "alerts", "alerts_in_alerting_state_"+apiAt.Format("2006-01-02T150405.000000")+"Z.json"), doc,
		true)
}

// writeJSON writes v as Python's json.dump(indent=4) does: four spaces, no HTML escaping, no
// final newline unless newline (the saved answers of the alerts API end with one).
func writeJSON(path string, v any, newline bool) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "    ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	out := bytes.TrimRight(b.Bytes(), "\n")
	if newline {
		out = append(out, '\n')
	}
	return os.WriteFile(path, out, 0o644)
}
