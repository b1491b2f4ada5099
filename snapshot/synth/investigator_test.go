package synth_test

import (
	"cmp"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/snapshot"
)

// investigate answers a task folder the way an SRE who follows the evidence would, reading
// only the snapshot: the failures that last to the end of the window (traces), the service
// where each starts (the spans fail or slow down by themselves, or calls to it get no
// answer), then what acts on that service and does something (objects, events). It is the
// proof that the decoys of a generated task can be told from its root causes: a restart
// changes nothing but its restartedAt, a paused experiment injects nothing, a policy whose
// selector misses selects no pod, a blip ends.
func investigate(dir string) ([]string, error) {
	culprits, err := failingServices(dir)
	if err != nil {
		return nil, err
	}
	dumps, err := snapshot.ReadObjectDumps(filepath.Join(dir, "k8s_objects_raw.tsv"))
	if err != nil {
		return nil, fmt.Errorf("object dumps: %w", err)
	}
	if len(dumps) == 0 {
		return nil, fmt.Errorf("%s: no object dump", dir)
	}
	quotas, err := quotaRefusals(dir)
	if err != nil {
		return nil, err
	}
	first, last := dumps[0], dumps[len(dumps)-1]
	var out []string
	name := func(e string) {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	services := map[string]int64{} // Service name -> port
	for ref, body := range last.Bodies {
		if ref.Kind == "Service" {
			services[ref.Name] = gjson.Get(body, "spec.ports.0.port").Int()
		}
	}
	for ref, body := range last.Bodies {
		o := gjson.Parse(body)
		entity := ref.Namespace + "/" + ref.Kind + "/" + ref.Name
		switch {
		case ref.Kind == "ConfigMap" && ref.Name == "flagd-config":
			// The demo ships every flag off: one that is on is an injected failure.
			if strings.Contains(o.Get("data").String(), `\"defaultVariant\": \"on\"`) {
				name(entity)
			}
		case strings.HasPrefix(o.Get("apiVersion").String(), "chaos-mesh.org") && ref.Kind != "Schedule":
			if !injected(o) || !slices.ContainsFunc(culprits, func(c string) bool { return selects(o, c) }) {
				continue
			}
			name(entity)
			for _, owner := range o.Get("metadata.ownerReferences").Array() {
				if owner.Get("kind").String() == "Schedule" {
					name(ref.Namespace + "/Schedule/" + owner.Get("name").String())
				}
			}
		case ref.Kind == "NetworkPolicy":
			if slices.Contains(culprits, o.Get(`spec.podSelector.matchLabels.app\.kubernetes\.io/name`).String()) &&
				!o.Get("spec.ingress").Exists() && strings.Contains(o.Get("spec.policyTypes").Raw, "Ingress") {
				name(entity)
			}
		case ref.Kind == "HorizontalPodAutoscaler":
			if slices.Contains(culprits, o.Get("spec.scaleTargetRef.name").String()) &&
				o.Get("spec.maxReplicas").Int() <= o.Get("spec.minReplicas").Int() {
				name(entity)
			}
		case ref.Kind == "Deployment" && slices.Contains(culprits, ref.Name):
			if templateChanged(first.Bodies[ref], body) || badAddress(o, services) {
				name(entity)
			}
		case ref.Kind == "Pod":
			// A pod no node takes is a failure of its own, whoever notices (when the load
			// generator's is, nothing calls anything).
			switch reason := waiting(o); {
			case reason == "Unschedulable":
				name(entity)
			case slices.Contains([]string{"ImagePullBackOff", "ErrImagePull", "CrashLoopBackOff"}, reason) && slices.Contains(culprits, workloadOf(o)):
				name(ref.Namespace + "/Deployment/" + workloadOf(o))
			}
		}
	}
	for svc, quota := range quotas {
		if slices.Contains(culprits, svc) {
			name(quota)
		}
	}
	sort.Strings(out)
	return out, nil
}

// span is what the investigation keeps of a trace record.
type span struct {
	id, parent, service, kind, name, peer string
	failed                                bool
	at                                    time.Time
	took                                  time.Duration
}

var peerName = regexp.MustCompile(`'(?:net\.peer\.name|server\.address)': '([^']+)'`)

// slowSelf is a span's own time (without the calls it made) that no service of the shop
// takes when it is well.
const slowSelf = 150 * time.Millisecond

// failingServices are the services where failures start that last: the spans a service
// fails or slows down by itself (no call it made failed), and the calls to it that get no
// answer, in at least 4% of its calls over five minutes or more, to the end of the window.
func failingServices(dir string) ([]string, error) {
	var spans []span
	var end time.Time
	_, err := snapshot.ScanTable(filepath.Join(dir, "otel_traces_raw.tsv"), func(r snapshot.Row) error {
		at, _ := r.Time("Timestamp")
		took, _ := strconv.ParseInt(r.Get("Duration"), 10, 64)
		s := span{id: r.Get("SpanId"), parent: r.Get("ParentSpanId"), service: r.Get("ServiceName"), kind: r.Get("SpanKind"),
			name: r.Get("SpanName"), failed: r.Get("StatusCode") == "Error", at: at, took: time.Duration(took)}
		if m := peerName.FindStringSubmatch(r.Get("SpanAttributes")); m != nil {
			s.peer = m[1]
		}
		spans = append(spans, s)
		end = maxOf(end, at)
		return nil
	})
	if err != nil {
		return nil, err
	}
	serverOf := map[string]string{}
	children := map[string][]int{}
	for i, s := range spans {
		if s.kind == "Server" {
			serverOf[s.name] = s.service
		}
		children[s.parent] = append(children[s.parent], i)
	}
	calls, trouble := map[string][]time.Time{}, map[string][]time.Time{}
	for _, s := range spans {
		switch s.kind {
		case "Server", "Consumer":
			self, childFailed := s.took, false
			for _, c := range children[s.id] {
				self -= spans[c].took
				childFailed = childFailed || spans[c].failed
			}
			calls[s.service] = append(calls[s.service], s.at)
			if s.failed && !childFailed || self > slowSelf {
				trouble[s.service] = append(trouble[s.service], s.at)
			}
		case "Client":
			callee := cmp.Or(serverOf[s.name], s.peer)
			if callee == "" || callee == s.service || strings.Contains(s.name, "EventStream") ||
				slices.ContainsFunc(children[s.id], func(c int) bool { return spans[c].kind == "Server" }) {
				continue // a stream, or a call its callee answered (its server span tells)
			}
			calls[callee] = append(calls[callee], s.at)
			if s.failed || s.took > slowSelf {
				trouble[callee] = append(trouble[callee], s.at)
			}
		}
	}
	var out []string
	for svc, ts := range trouble {
		slices.SortFunc(ts, func(a, b time.Time) int { return a.Compare(b) })
		from, to := ts[0], ts[len(ts)-1]
		within := 0
		for _, t := range calls[svc] {
			if !t.Before(from) && !t.After(to) {
				within++
			}
		}
		if len(ts) >= 5 && to.Sub(from) >= 5*time.Minute && end.Sub(to) < 5*time.Minute && float64(len(ts)) >= 0.04*float64(within) {
			out = append(out, svc)
		}
	}
	sort.Strings(out)
	return out, nil
}

// quotaRefusals maps each service whose ReplicaSet could not create pods for a quota to the
// quota, from the events.
func quotaRefusals(dir string) (map[string]string, error) {
	out := map[string]string{}
	quota := regexp.MustCompile(`exceeded quota: ([a-z0-9-]+)`)
	_, err := snapshot.ScanTable(filepath.Join(dir, "k8s_events_raw.tsv"), func(r snapshot.Row) error {
		e, err := r.Event()
		if err != nil || e.Reason != "FailedCreate" || e.Regarding.Kind != "ReplicaSet" {
			return nil
		}
		// The ReplicaSet is <deployment>-<pod-template-hash>.
		if m := quota.FindStringSubmatch(e.Message); m != nil && strings.Contains(e.Regarding.Name, "-") {
			rs := e.Regarding.Name
			out[rs[:strings.LastIndex(rs, "-")]] = e.Regarding.Namespace + "/ResourceQuota/" + m[1]
		}
		return nil
	})
	return out, err
}

// injected tells an experiment at work from a paused or finished one.
func injected(o gjson.Result) bool {
	for _, c := range o.Get("status.conditions").Array() {
		if c.Get("type").String() == "AllInjected" {
			return c.Get("status").String() == "True"
		}
	}
	return false
}

// selects reports whether a chaos experiment's pods, or its partition's other side, are
// service's.
func selects(o gjson.Result, service string) bool {
	for _, path := range []string{"spec.selector", "spec.target.selector"} {
		if o.Get(path+`.labelSelectors.app\.kubernetes\.io/name`).String() == service {
			return true
		}
	}
	return false
}

// templateChanged reports whether a Deployment's pod template changed between two dumps in
// more than its restartedAt (which a restart sets).
func templateChanged(before, after string) bool {
	return before != "" && gjson.Get(before, "spec.template.spec").Raw != gjson.Get(after, "spec.template.spec").Raw
}

// badAddress reports whether a Deployment points one of its *_ADDR variables at a host and
// port no Service of the namespace serves.
func badAddress(o gjson.Result, services map[string]int64) bool {
	for _, env := range o.Get("spec.template.spec.containers.0.env").Array() {
		name, value := env.Get("name").String(), env.Get("value").String()
		if !strings.HasSuffix(name, "_ADDR") || value == "" {
			continue
		}
		host, port, _ := strings.Cut(value, ":")
		p, _ := strconv.ParseInt(port, 10, 64)
		if want, ok := services[host]; !ok || want != p {
			return true
		}
	}
	return false
}

// waiting is why a pod does not run: its container's waiting reason, or Unschedulable.
func waiting(o gjson.Result) string {
	for _, c := range o.Get("status.conditions").Array() {
		if c.Get("type").String() == "PodScheduled" && c.Get("status").String() == "False" {
			return c.Get("reason").String()
		}
	}
	return o.Get("status.containerStatuses.0.state.waiting.reason").String()
}

func workloadOf(o gjson.Result) string {
	return o.Get(`metadata.labels.app\.kubernetes\.io/name`).String()
}

func maxOf(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
