package synth

import (
	"fmt"
	"sort"
	"time"
)

// event is one Kubernetes Event to record.
type event struct {
	at        time.Time
	kind      string // of the object it regards
	namespace string
	name      string
	typ       string // Normal or Warning
	reason    string
	note      string
	reporter  string
}

// events lists the cluster's events over the window, in time order: a little background
// noise and the fault's own trail.
func (w *world) events() []event {
	var out []event
	for t := w.start.Add(90 * time.Second); t.Before(w.end); t = t.Add(7 * time.Minute) {
		out = append(out, event{at: t, kind: "Node", name: w.nodes[w.rng.IntN(len(w.nodes))], typ: "Normal",
			reason: "NodeHasSufficientMemory", note: "Node status is now: NodeHasSufficientMemory", reporter: "kubelet"})
	}
	f := w.fault
	s := w.byName[f.victim]
	newRS := s.name + "-" + w.rollout.rsHash
	every := func(from time.Time, step time.Duration, fn func(t time.Time)) {
		for t := from; t.Before(w.end); t = t.Add(step) {
			fn(t)
		}
	}
	podEvent := func(t time.Time, p pod, typ, reason, note string) {
		out = append(out, event{at: t, kind: "Pod", namespace: appNamespace, name: p.name, typ: typ, reason: reason, note: note, reporter: "kubelet"})
	}
	rollout := func() {
		out = append(out,
			event{at: w.faultAt, kind: "Deployment", namespace: appNamespace, name: s.name, typ: "Normal", reason: "ScalingReplicaSet",
				note: fmt.Sprintf("Scaled down replica set %s-%s from 1 to 0", s.name, s.rsHash), reporter: "deployment-controller"},
			event{at: w.faultAt.Add(2 * time.Second), kind: "Deployment", namespace: appNamespace, name: s.name, typ: "Normal", reason: "ScalingReplicaSet",
				note: fmt.Sprintf("Scaled up replica set %s to 1", newRS), reporter: "deployment-controller"})
	}
	created := func(p pod) {
		out = append(out, event{at: p.started, kind: "ReplicaSet", namespace: appNamespace, name: newRS, typ: "Normal", reason: "SuccessfulCreate",
			note: "Created pod: " + p.name, reporter: "replicaset-controller"})
		podEvent(p.started.Add(time.Second), p, "Normal", "Scheduled", fmt.Sprintf("Successfully assigned %s/%s to %s", appNamespace, p.name, p.node))
	}
	switch f.kind {
	case "bad-image":
		rollout()
		p := w.rollout.pods[0]
		created(p)
		image := w.imageAt(s, w.end)
		every(p.started.Add(3*time.Second), 75*time.Second, func(t time.Time) {
			podEvent(t, p, "Normal", "Pulling", fmt.Sprintf("Pulling image %q", image))
			podEvent(t.Add(time.Second), p, "Warning", "Failed", fmt.Sprintf("Failed to pull image %q: rpc error: code = NotFound desc = failed to pull and unpack image %q: not found", image, image))
			podEvent(t.Add(time.Second), p, "Warning", "Failed", "Error: ErrImagePull")
			podEvent(t.Add(20*time.Second), p, "Normal", "BackOff", fmt.Sprintf("Back-off pulling image %q", image))
			podEvent(t.Add(20*time.Second), p, "Warning", "Failed", "Error: ImagePullBackOff")
		})
	case "oom", "env":
		rollout()
		p := w.rollout.pods[0]
		created(p)
		podEvent(p.started.Add(3*time.Second), p, "Normal", "Pulled", fmt.Sprintf("Container image %q already present on machine", s.image))
		podEvent(p.started.Add(4*time.Second), p, "Normal", "Created", "Created container "+s.name)
		podEvent(p.started.Add(5*time.Second), p, "Normal", "Started", "Started container "+s.name)
		if f.kind == "oom" {
			every(p.started.Add(50*time.Second), 90*time.Second, func(t time.Time) {
				out = append(out, event{at: t, kind: "Node", name: p.node, typ: "Warning", reason: "OOMKilling",
					note: fmt.Sprintf("Memory cgroup out of memory: Killed process %d (%s) total-vm:1214516kB, anon-rss:49012kB", 3000+w.rng.IntN(9000), s.name), reporter: "kernel-monitor"})
				podEvent(t.Add(15*time.Second), p, "Warning", "BackOff", fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", s.name, p.name, appNamespace, p.uid))
			})
		}
	case "quota":
		rollout()
		every(w.faultAt.Add(3*time.Second), 60*time.Second, func(t time.Time) {
			out = append(out, event{at: t, kind: "ReplicaSet", namespace: appNamespace, name: newRS, typ: "Warning", reason: "FailedCreate",
				note: fmt.Sprintf("Error creating: pods %q is forbidden: exceeded quota: %s, requested: limits.memory=300Mi, used: limits.memory=5400Mi, limited: limits.memory=5400Mi",
					newRS+"-"+w.suffix(5), f.rootName()), reporter: "replicaset-controller"})
		})
	case "partition":
		name := f.rootName()
		out = append(out, event{at: w.faultAt, kind: "Schedule", namespace: chaosNamespace, name: name, typ: "Normal", reason: "Spawned",
			note: "Create new object: " + name, reporter: "schedule-cron"})
		for i, side := range []string{f.caller, f.victim} {
			for _, p := range w.byName[side].pods {
				out = append(out, event{at: w.faultAt.Add(time.Duration(i+1) * time.Second), kind: "NetworkChaos", namespace: chaosNamespace, name: name,
					typ: "Normal", reason: "Applied", note: fmt.Sprintf("Successfully apply chaos for %s/%s", appNamespace, p.name), reporter: "records"})
			}
		}
	case "hpa":
		out = append(out, event{at: w.faultAt.Add(15 * time.Second), kind: "HorizontalPodAutoscaler", namespace: appNamespace, name: s.name, typ: "Normal",
			reason: "SuccessfulRescale", note: "New size: 1; reason: Current number of replicas above Spec.MaxReplicas", reporter: "horizontal-pod-autoscaler"},
			event{at: w.faultAt.Add(16 * time.Second), kind: "Deployment", namespace: appNamespace, name: s.name, typ: "Normal", reason: "ScalingReplicaSet",
				note: fmt.Sprintf("Scaled down replica set %s-%s from 3 to 1", s.name, s.rsHash), reporter: "deployment-controller"})
		for _, p := range s.pods[1:] {
			podEvent(w.faultAt.Add(17*time.Second), p, "Normal", "Killing", "Stopping container "+s.name)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// eventBody is the Body column of an events row: the watch event of an events.k8s.io/v1 Event.
func (w *world) eventBody(e event, seq int) obj {
	name := fmt.Sprintf("%s.%x", e.name, e.at.UnixNano()+int64(seq))
	regarding := obj{"apiVersion": "v1", "kind": e.kind, "name": e.name, "uid": w.uidFor("meta/" + e.namespace + "/" + e.name)}
	if e.namespace != "" {
		regarding["namespace"] = e.namespace
	}
	ns := e.namespace
	if ns == "" {
		ns = "default"
	}
	return obj{"type": "ADDED", "object": obj{
		"apiVersion": "events.k8s.io/v1", "kind": "Event", "eventTime": nil,
		"metadata": obj{"name": name, "namespace": ns, "creationTimestamp": ts(e.at), "uid": w.uid()},
		"reason":   e.reason, "note": e.note, "type": e.typ, "regarding": regarding,
		"reportingController": e.reporter, "deprecatedCount": 1,
		"deprecatedFirstTimestamp": ts(e.at), "deprecatedLastTimestamp": ts(e.at),
		"deprecatedSource": obj{"component": e.reporter},
	}}
}
