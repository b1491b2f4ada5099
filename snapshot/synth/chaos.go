package synth

import (
	"fmt"
	"strings"
	"time"
)

const chaosAPI = "chaos-mesh.org/v1alpha1"

// chaosKinds maps a chaos fault to the chaos-mesh kind it creates.
var chaosKinds = map[string]string{
	"network-chaos": "NetworkChaos", "stress-chaos": "StressChaos", "jvm-chaos": "JVMChaos",
	"pod-chaos": "PodChaos", "http-chaos": "HTTPChaos",
}

// injectChaos creates a chaos-mesh experiment of kind on the victim, spawned by a Schedule
// when scheduled (then the Schedule is the root cause) or, sometimes, anyway.
func (w *world) injectChaos(f *fault, kind string, scheduled bool) {
	chaosKind := chaosKinds[kind]
	action, spec := w.chaosSpec(f, kind)
	name := fmt.Sprintf("%s-%s-%s", appNamespace, f.victim, action)
	viaSchedule := scheduled || w.rng.IntN(10) < 3
	f.mechanism = "chaos"
	f.condition = fmt.Sprintf("Chaos Mesh %s %s on %s", chaosKind, strings.ReplaceAll(action, "-", " "), f.victim)
	f.actions = []string{fmt.Sprintf("Delete the %s %s", chaosKind, name)}
	gtKind := chaosKind
	if chaosKind == "HTTPChaos" && w.rng.IntN(2) == 0 {
		gtKind = "HttpChaos" // as some real ground truths spell it
	}
	filter := []string{name}
	if w.rng.IntN(2) == 0 {
		filter = []string{".*" + strings.TrimPrefix(name, appNamespace+"-")}
	}
	chaosGroup := gtGroup{id: name + "-1", kind: gtKind, namespace: chaosNamespace, filter: filter}
	schedGroup := gtGroup{id: name, kind: "Schedule", namespace: chaosNamespace, filter: filter}
	spawned := name
	if viaSchedule {
		spawned = fmt.Sprintf("%s-%d", name, f.at.Unix())
	}
	if scheduled {
		f.rootKind, f.rootNS, f.rootName = "Schedule", chaosNamespace, name
		schedGroup.root = true
		f.groups = []gtGroup{schedGroup}
		if w.rng.IntN(2) == 0 {
			f.groups = append(f.groups, chaosGroup)
		}
	} else {
		f.rootKind, f.rootNS, f.rootName = chaosKind, chaosNamespace, spawned
		chaosGroup.root = true
		f.groups = []gtGroup{chaosGroup}
		if viaSchedule {
			f.groups = append(f.groups, schedGroup)
		}
	}
	victimPods := podsOf(w.byName[f.victim], f.at)
	records := []any{}
	for _, p := range victimPods {
		records = append(records, obj{"id": appNamespace + "/" + p.name, "phase": "Injected", "selectorKey": ".",
			"injectedCount": 1, "recoveredCount": 0,
			"events": []any{obj{"operation": "Apply", "timestamp": ts(f.at.Add(time.Second)), "type": "Succeeded"}}})
	}
	chaosObj := func(objName string, owner obj) func(time.Time) obj {
		return func(t time.Time) obj {
			extra := obj{"finalizers": []any{"chaos-mesh/records"},
				"annotations": obj{"experiment.chaos-mesh.org/pause": "false"}}
			if owner != nil {
				extra["ownerReferences"] = []any{owner}
				extra["labels"] = obj{"managed-by": name}
			}
			return obj{
				"apiVersion": chaosAPI,
				"kind":       chaosKind,
				"metadata":   w.meta(chaosKind, objName, chaosNamespace, f.at, extra),
				"spec":       spec,
				"status": obj{"conditions": []any{
					obj{"type": "Selected", "status": "True"}, obj{"type": "AllInjected", "status": "True"},
					obj{"type": "AllRecovered", "status": "False"}, obj{"type": "Paused", "status": "False"}},
					"experiment": obj{"desiredPhase": "Run", "containerRecords": records}},
			}
		}
	}
	var owner obj
	if viaSchedule {
		owner = obj{"apiVersion": chaosAPI, "kind": "Schedule", "name": name,
			"uid": w.uidFor("Schedule", chaosNamespace, name), "controller": true, "blockOwnerDeletion": true}
		field := strings.ToLower(chaosKind[:1]) + chaosKind[1:]
		if chaosKind == "HTTPChaos" {
			field = "httpChaos"
		}
		sched := obj{"schedule": "@every 2h", "type": chaosKind, "historyLimit": 1, "concurrencyPolicy": "Forbid",
			field: spec}
		f.objects = append(f.objects, addedObject{from: f.at, build: func(t time.Time) obj {
			return obj{
				"apiVersion": chaosAPI,
				"kind":       "Schedule",
				"metadata":   w.meta("Schedule", name, chaosNamespace, f.at, nil),
				"spec":       sched,
				"status": obj{"time": ts(f.at), "active": []any{obj{"apiVersion": chaosAPI, "kind": chaosKind, "name": spawned,
					"namespace": chaosNamespace, "uid": w.uidFor(chaosKind, chaosNamespace, spawned)}}},
			}
		}})
		f.events = append(f.events,
			event{at: f.at, kind: "Schedule", apiVersion: chaosAPI, namespace: chaosNamespace, name: name,
				typ: "Normal", reason: "Spawned", note: "Create new object: " + spawned, reporter: "schedule-cron"})
	}
	f.objects = append(f.objects, addedObject{from: f.at, build: chaosObj(spawned, owner)})
	ev := func(d time.Duration, reason, note, reporter string) {
		f.events = append(f.events,
			event{at: f.at.Add(d), kind: chaosKind, apiVersion: chaosAPI, namespace: chaosNamespace, name: spawned,
				typ: "Normal", reason: reason, note: note, reporter: reporter})
	}
	ev(0, "FinalizerInited", "Finalizer has been inited", "initFinalizers")
	ev(time.Second, "Updated", "Successfully update finalizer of resource", "initFinalizers")
	ev(time.Second, "Started", "Experiment has started", "desiredphase")
	for _, p := range victimPods {
		ev(2*time.Second, "Applied", fmt.Sprintf("Successfully apply chaos for %s/%s", appNamespace, p.name), "records")
	}
}

// chaosSpec picks the experiment's action, sets the fault's effects and returns the spec.
func (w *world) chaosSpec(f *fault, kind string) (string, obj) {
	selector := obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"app.kubernetes.io/name": f.victim}}
	switch kind {
	case "network-chaos":
		switch w.rng.IntN(3) {
		case 0:
			latency := time.Duration(300+w.rng.IntN(1700)) * time.Millisecond
			w.slowdown(f, f.victim, 1, latency)
			return "network-delay", obj{"action": "delay", "mode": "all", "selector": selector, "direction": "to",
				"delay": obj{"latency": latency.String(), "jitter": "50ms", "correlation": "25"}}
		case 1:
			loss := 30 + w.rng.IntN(50)
			f.effects = append(f.effects, effect{service: f.victim, mode: modeCut, from: f.at, rate: float64(loss) / 100})
			return "network-loss", obj{"action": "loss", "mode": "all", "selector": selector, "direction": "to",
				"loss": obj{"loss": fmt.Sprint(loss), "correlation": "25"}}
		default:
			callers := w.callers(f.victim)
			caller := pick(w, callers)
			f.effects = append(f.effects,
				effect{service: f.victim, mode: modeCut, from: f.at, rate: 1, callers: []string{caller}})
			return "network-partition", obj{"action": "partition", "mode": "all", "selector": selector, "direction": "both",
				"target": obj{"mode": "all",
					"selector": obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"app.kubernetes.io/name": caller}}}}
		}
	case "stress-chaos":
		if w.rng.IntN(2) == 0 {
			w.slowdown(f, f.victim, 0.8, time.Duration(400+w.rng.IntN(1500))*time.Millisecond)
			f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, cpu: 1.9})
			return "cpu-stress", obj{"mode": "all", "selector": selector,
				"stressors": obj{"cpu": obj{"workers": 30, "load": 100}}, "duration": "60m"}
		}
		w.slowdown(f, f.victim, 0.5, time.Duration(200+w.rng.IntN(800))*time.Millisecond)
		f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, memory: 1.8e9})
		return "memory-stress", obj{"mode": "all", "selector": selector,
			"stressors": obj{"memory": obj{"workers": 4, "size": "2GiB"}}, "duration": "60m"}
	case "jvm-chaos":
		jvm := obj{"mode": "all", "selector": selector, "class": "oteldemo.AdService$AdServiceImpl", "method": "getAds",
			"port": 9277}
		if f.victim == "fraud-detection" {
			jvm["class"], jvm["method"] = "frauddetection.MainKt", "main"
		}
		switch w.rng.IntN(3) {
		case 0:
			w.slowdown(f, f.victim, 1, time.Duration(800+w.rng.IntN(2000))*time.Millisecond)
			jvm["action"], jvm["latency"] = "latency", 2000
			return "jvm-latency", jvm
		case 1:
			f.effects = append(f.effects, effect{service: f.victim, mode: modeFail, from: f.at, rate: w.rate(0.3, 0.9),
				message: "java.io.IOException: Connection reset by peer\n\t" +
					"at java.base/sun.nio.ch.SocketDispatcher.read0(Native Method)"})
			jvm["action"], jvm["exception"] = "exception", "java.io.IOException(\"Connection reset by peer\")"
			return "jvm-exception", jvm
		default:
			w.slowdown(f, f.victim, 0.6, time.Duration(600+w.rng.IntN(900))*time.Millisecond)
			f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, cpu: 1.2})
			jvm["action"] = "gc"
			return "jvm-gc", jvm
		}
	case "pod-chaos":
		f.effects = append(f.effects, effect{service: f.victim, mode: modeDown, from: f.at})
		f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, reason: "NotReady"})
		return "pod-failure", obj{"action": "pod-failure", "mode": "all", "selector": selector, "duration": "60m"}
	}
	// http-chaos
	path := map[string]string{"email": "/send_order_confirmation", "quote": "/getquote"}[f.victim]
	http := obj{"mode": "all", "selector": selector, "target": "Request", "port": w.byName[f.victim].port,
		"method": "POST", "path": path, "duration": "60m"}
	if w.rng.IntN(2) == 0 {
		f.effects = append(f.effects, effect{service: f.victim, mode: modeRefused, from: f.at, rate: 1,
			message: "read: connection reset by peer"})
		http["abort"] = true
		return "http-chaos-abort", http
	}
	w.slowdown(f, f.victim, 1, time.Duration(2+w.rng.IntN(6))*time.Second)
	http["delay"] = "5s"
	return "http-chaos-delay", http
}
