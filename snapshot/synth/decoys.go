package synth

import (
	"fmt"
	"slices"
	"time"
)

// Decoys are changes on the fault's own path that cause nothing, as real incidents have them:
// an operator restarting a failing service after the alerts fired, a chaos experiment
// created for later and left paused, a network policy whose selector misses. Each acts on a
// service that fails, so only what it does, and when, tells it from the root cause.

// restartBlip is what a rollout restart does to its callers: for a few seconds the old pod
// is gone from the endpoints but still dialled (connection refused), then the new one
// answers slowly while it warms up.
func (w *world) restartBlip(s *service, at time.Time) {
	refused := at.Add(time.Duration(15+w.rng.IntN(30)) * time.Second)
	warm := refused.Add(time.Duration(60+w.rng.IntN(90)) * time.Second)
	w.blips = append(w.blips, effect{service: s.name, mode: modeDown, from: at, until: refused},
		effect{service: s.name, mode: modeSlow, from: refused, until: warm, rate: w.rate(0.5, 0.9),
			delay: time.Duration(300+w.rng.IntN(900)) * time.Millisecond})
}

// prepareDecoys lays out, for each fault, an operator's restart of a service on its path a
// few minutes after the alerts began (two tasks in three), a paused chaos experiment and a
// network policy whose selector matches no pod (one task in two each), on the failing
// service or its nearest caller.
func (w *world) prepareDecoys() {
	for _, f := range w.faults {
		if w.rng.IntN(3) < 2 {
			at := maxTime(f.at, w.start).Add(time.Duration(3*60+w.rng.IntN(5*60)) * time.Second)
			if s := w.remediationTarget(f); s != nil && at.Before(w.end.Add(-3*time.Minute)) {
				w.rollouts = append(w.rollouts, w.restart(s, at))
			}
		}
		for _, decoy := range []func(string){w.pausedChaos, w.deadPolicy} {
			if w.rng.IntN(2) == 0 {
				target := f.victim
				if chain := w.chain(f); len(chain) > 1 && w.rng.IntN(3) == 0 {
					target = chain[1]
				}
				decoy(target)
			}
		}
	}
}

// remediationTarget is what an operator restarts when a fault's alerts fire: the failing
// service itself when a restart leaves the fault in place, else its nearest caller.
func (w *world) remediationTarget(f *fault) *service {
	restartable := func(name string) bool {
		s := w.byName[name]
		return s != nil && s.kind == "Deployment" && len(s.revisions) == 1 && name != "flagd" &&
			name != "load-generator"
	}
	onVictim := f.flag != nil || f.mechanism == "chaos" || f.kind == "netpol"
	if onVictim && restartable(f.victim) {
		return w.byName[f.victim]
	}
	for _, name := range w.chain(f) {
		if name != f.victim && restartable(name) {
			return w.byName[name]
		}
	}
	return nil
}

// decoyChaos are experiments a chaos engineer prepares: kinds and actions no fault uses, so
// that no answer key's filter matches them.
var decoyChaos = []struct{ kind, action string }{
	{"PodChaos", "container-kill"}, {"NetworkChaos", "network-bandwidth"}, {"NetworkChaos", "network-corrupt"},
}

// pausedChaos creates, during the window, a chaos experiment on target that is paused from
// the start: its pods are selected but nothing is injected.
func (w *world) pausedChaos(target string) {
	d := pick(w, decoyChaos)
	name := fmt.Sprintf("%s-%s-%s", appNamespace, target, d.action)
	if slices.ContainsFunc(w.decoys, func(a addedObject) bool { return a.name == name }) {
		return
	}
	at := w.randomTime()
	selector := obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"app.kubernetes.io/name": target}}
	spec := obj{"mode": "all", "selector": selector, "duration": "10m"}
	switch d.action {
	case "container-kill":
		spec["action"], spec["containerNames"] = "container-kill", []any{target}
	case "network-bandwidth":
		spec["action"], spec["direction"] = "bandwidth", "to"
		spec["bandwidth"] = obj{"rate": "1mbps", "limit": 20971520, "buffer": 10000}
	default:
		spec["action"], spec["direction"] = "corrupt", "to"
		spec["corrupt"] = obj{"corrupt": "40", "correlation": "25"}
	}
	records := []any{}
	for _, p := range podsOf(w.byName[target], at) {
		records = append(records, obj{"id": appNamespace + "/" + p.name, "phase": "Not Injected", "selectorKey": ".",
			"injectedCount": 0, "recoveredCount": 0})
	}
	w.decoys = append(w.decoys, addedObject{name: name, from: at, build: func(time.Time) obj {
		return obj{"apiVersion": chaosAPI, "kind": d.kind, "metadata": w.meta(d.kind, name, chaosNamespace, at, obj{
			"finalizers": []any{"chaos-mesh/records"}, "annotations": obj{"experiment.chaos-mesh.org/pause": "true"}}),
			"spec": spec, "status": obj{"conditions": []any{
				obj{"type": "Selected", "status": "True"}, obj{"type": "AllInjected", "status": "False"},
				obj{"type": "AllRecovered", "status": "True"}, obj{"type": "Paused", "status": "True"}},
				"experiment": obj{"desiredPhase": "Stop", "containerRecords": records}}}
	}})
	for i, e := range []struct{ reason, note, reporter string }{
		{"FinalizerInited", "Finalizer has been inited", "initFinalizers"},
		{"Updated", "Successfully update finalizer of resource", "initFinalizers"},
		{"Paused", "Experiment has been paused", "desiredphase"},
	} {
		w.decoyEvents = append(w.decoyEvents, event{at: at.Add(time.Duration(i) * time.Second), kind: d.kind,
			apiVersion: chaosAPI, namespace: chaosNamespace, name: name, typ: "Normal", reason: e.reason, note: e.note,
			reporter: e.reporter})
	}
}

// deadPolicy creates, during the window, a NetworkPolicy meant to isolate target whose
// selector uses a label the pods do not carry (app rather than app.kubernetes.io/name): it
// denies all ingress to no pod at all.
func (w *world) deadPolicy(target string) {
	name := fmt.Sprintf(pick(w, []string{"restrict-%s", "%s-ingress-lockdown", "isolate-%s"}), target)
	if slices.ContainsFunc(w.decoys, func(a addedObject) bool { return a.name == name }) {
		return
	}
	at := w.randomTime()
	w.decoys = append(w.decoys, addedObject{name: name, from: at, build: func(time.Time) obj {
		return obj{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
			"metadata": w.meta("NetworkPolicy", name, appNamespace, at, nil),
			"spec":     obj{"podSelector": obj{"matchLabels": obj{"app": target}}, "policyTypes": []any{"Ingress"}}}
	}})
}

// randomTime is a time from a minute into the window to four minutes before its end.
func (w *world) randomTime() time.Time {
	return w.start.Add(time.Duration(60+w.rng.IntN(int(w.end.Sub(w.start).Seconds())-300)) * time.Second)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
