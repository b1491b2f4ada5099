package synth

import (
	"fmt"
	"time"
)

type obj = map[string]any

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

func meta(w *world, name, namespace string, created time.Time, extra obj) obj {
	m := obj{"name": name, "uid": w.uidFor("meta/" + namespace + "/" + name), "creationTimestamp": ts(created),
		"resourceVersion": fmt.Sprint(1000 + len(name)*37)}
	if namespace != "" {
		m["namespace"] = namespace
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

// uidFor gives an object the same uid in every dump.
func (w *world) uidFor(key string) string {
	if u, ok := w.uids[key]; ok {
		return u
	}
	u := w.uid()
	w.uids[key] = u
	return u
}

// replacement is the rollout a fault causes: the victim's new ReplicaSet and pods.
type replacement struct {
	rsHash string
	pods   []pod
}

// podsAt lists the pods a service runs at time t, with the ReplicaSet hash they belong to.
func (w *world) podsAt(s *service, t time.Time) ([]pod, string) {
	f := w.fault
	if s.name != f.victim || t.Before(w.faultAt) {
		return s.pods, s.rsHash
	}
	switch f.kind {
	case "bad-image", "oom", "env":
		return w.rollout.pods, w.rollout.rsHash
	case "quota":
		return nil, w.rollout.rsHash // the new pods are refused by the quota
	case "hpa":
		return s.pods[:1], s.rsHash
	}
	return s.pods, s.rsHash
}

// prepareRollout creates the victim's new ReplicaSet and pods for faults that roll it out.
func (w *world) prepareRollout() {
	s := w.byName[w.fault.victim]
	switch w.fault.kind {
	case "bad-image", "oom", "env", "quota":
		w.rollout.rsHash = w.suffix(10)
		if w.fault.kind == "quota" {
			return // the quota refuses the new pods: there are none
		}
		saved := s.rsHash
		s.rsHash = w.rollout.rsHash
		w.rollout.pods = []pod{w.newPod(s, 0, w.faultAt.Add(5*time.Second))}
		s.rsHash = saved
	}
}

func (w *world) imageAt(s *service, t time.Time) string {
	if s.name == w.fault.victim && w.fault.kind == "bad-image" && !t.Before(w.faultAt) {
		return s.image + "-rc1-typo"
	}
	return s.image
}

func (w *world) memoryLimitAt(s *service, t time.Time) string {
	if s.name == w.fault.victim && w.fault.kind == "oom" && !t.Before(w.faultAt) {
		return "48Mi"
	}
	return "300Mi"
}

func (w *world) envAt(s *service, t time.Time) []any {
	env := []any{obj{"name": "OTEL_SERVICE_NAME", "value": s.name}, obj{"name": "OTEL_COLLECTOR_NAME", "value": "otel-collector"}}
	for _, dep := range s.calls {
		name := upperSnake(dep) + "_ADDR"
		value := fmt.Sprintf("%s:%d", dep, w.byName[dep].port)
		if s.name == w.fault.victim && w.fault.kind == "env" && name == w.fault.envVar && !t.Before(w.faultAt) {
			value = fmt.Sprintf("%s:%d", dep, w.byName[dep].port+1)
		}
		env = append(env, obj{"name": name, "value": value})
	}
	return env
}

func (w *world) container(s *service, t time.Time) obj {
	return obj{"name": s.name, "image": w.imageAt(s, t), "env": w.envAt(s, t),
		"ports":     []any{obj{"containerPort": s.port, "name": "service"}},
		"resources": obj{"limits": obj{"memory": w.memoryLimitAt(s, t)}, "requests": obj{"memory": "100Mi", "cpu": "50m"}}}
}

func labels(s *service) obj {
	return obj{"app.kubernetes.io/name": s.name, "app.kubernetes.io/component": s.name, "opentelemetry.io/name": s.name}
}

// objectsAt is one full dump of the cluster at time t.
func (w *world) objectsAt(t time.Time) []obj {
	var out []obj
	for _, ns := range []string{appNamespace, chaosNamespace, "kube-system", "default"} {
		out = append(out, obj{"apiVersion": "v1", "kind": "Namespace", "metadata": meta(w, ns, "", w.start.Add(-30*24*time.Hour), nil),
			"status": obj{"phase": "Active"}})
	}
	for _, n := range w.nodes {
		out = append(out, obj{"apiVersion": "v1", "kind": "Node", "metadata": meta(w, n, "", w.start.Add(-30*24*time.Hour),
			obj{"labels": obj{"kubernetes.io/hostname": n, "node-role.kubernetes.io/worker": ""}}),
			"status": obj{"conditions": []any{obj{"type": "Ready", "status": "True"}}, "capacity": obj{"cpu": "4", "memory": "16Gi"}}})
	}
	for _, s := range w.services {
		out = append(out, w.workloadObjects(s, t)...)
	}
	out = append(out, w.flagdConfig(t))
	out = append(out, obj{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
		"metadata": meta(w, "allow-otel-demo-internal", appNamespace, w.start.Add(-48*time.Hour), nil),
		"spec": obj{"podSelector": obj{}, "policyTypes": []any{"Ingress"},
			"ingress": []any{obj{"from": []any{obj{"namespaceSelector": obj{"matchLabels": obj{"kubernetes.io/metadata.name": appNamespace}}}}}}}})
	out = append(out, obj{"apiVersion": "v1", "kind": "LimitRange", "metadata": meta(w, "otel-demo-limits", appNamespace, w.start.Add(-48*time.Hour), nil),
		"spec": obj{"limits": []any{obj{"type": "Container", "default": obj{"memory": "300Mi"}}}}})
	return append(out, w.faultObjects(t)...)
}

func (w *world) workloadObjects(s *service, t time.Time) []obj {
	pods, hash := w.podsAt(s, t)
	created := w.start.Add(-72 * time.Hour)
	kind := "Deployment"
	if s.stateful {
		kind = "StatefulSet"
	}
	template := obj{"metadata": obj{"labels": labels(s)}, "spec": obj{"containers": []any{w.container(s, t)}}}
	replicas := len(s.pods)
	if s.name == w.fault.victim && w.fault.kind == "hpa" && !t.Before(w.faultAt) {
		replicas = 1
	}
	out := []obj{
		{"apiVersion": "apps/v1", "kind": kind, "metadata": meta(w, s.name, appNamespace, created, obj{"labels": labels(s), "generation": generation(w, s, t)}),
			"spec":   obj{"replicas": replicas, "selector": obj{"matchLabels": obj{"opentelemetry.io/name": s.name}}, "template": template, "strategy": obj{"type": "Recreate"}},
			"status": obj{"replicas": len(pods), "readyReplicas": w.readyCount(s, pods, t), "availableReplicas": w.readyCount(s, pods, t)}},
		{"apiVersion": "v1", "kind": "Service", "metadata": meta(w, s.name, appNamespace, created, obj{"labels": labels(s)}),
			"spec": obj{"selector": obj{"opentelemetry.io/name": s.name}, "ports": []any{obj{"port": s.port, "targetPort": s.port, "name": "tcp-service"}}, "type": "ClusterIP"}},
	}
	if !s.stateful {
		owner := []any{obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.name, "controller": true}}
		for _, h := range w.replicaSetHashes(s, t) {
			rs := s.name + "-" + h
			n := 0
			if h == hash {
				n = replicas
			}
			out = append(out, obj{"apiVersion": "apps/v1", "kind": "ReplicaSet",
				"metadata": meta(w, rs, appNamespace, created, obj{"ownerReferences": owner, "labels": obj{"pod-template-hash": h}}),
				"spec":     obj{"replicas": n}, "status": obj{"replicas": countIn(pods, rs), "readyReplicas": countIn(pods, rs)}})
		}
	}
	for i, p := range pods {
		out = append(out, w.podObject(s, p, i, t))
	}
	return out
}

func countIn(pods []pod, rs string) int {
	n := 0
	for _, p := range pods {
		if p.replicaSet == rs {
			n++
		}
	}
	return n
}

func generation(w *world, s *service, t time.Time) int {
	if s.name == w.fault.victim && !t.Before(w.faultAt) {
		return 4
	}
	return 3
}

// replicaSetHashes lists the ReplicaSets of a Deployment at t: the old one stays (scaled to
// zero) after a rollout.
func (w *world) replicaSetHashes(s *service, t time.Time) []string {
	if s.name == w.fault.victim && w.rollout.rsHash != "" && !t.Before(w.faultAt) {
		return []string{s.rsHash, w.rollout.rsHash}
	}
	return []string{s.rsHash}
}

func (w *world) readyCount(s *service, pods []pod, t time.Time) int {
	if s.name == w.fault.victim && !t.Before(w.faultAt) && (w.fault.kind == "bad-image" || w.fault.kind == "oom") {
		return 0
	}
	return len(pods)
}

func (w *world) podObject(s *service, p pod, ordinal int, t time.Time) obj {
	owner := obj{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": p.replicaSet, "controller": true}
	if s.stateful {
		owner = obj{"apiVersion": "apps/v1", "kind": "StatefulSet", "name": s.name, "controller": true}
	}
	state := obj{"running": obj{"startedAt": ts(p.started)}}
	cs := obj{"name": s.name, "image": w.imageAt(s, t), "ready": true, "restartCount": 0, "state": state}
	phase := "Running"
	victim := s.name == w.fault.victim && !t.Before(w.faultAt)
	switch {
	case victim && w.fault.kind == "bad-image":
		phase = "Pending"
		cs["ready"], cs["state"] = false, obj{"waiting": obj{"reason": "ImagePullBackOff",
			"message": fmt.Sprintf("Back-off pulling image %q", w.imageAt(s, t))}}
	case victim && w.fault.kind == "oom":
		restarts := int(t.Sub(w.faultAt)/(90*time.Second)) + 1
		cs["ready"], cs["restartCount"] = false, restarts
		cs["state"] = obj{"waiting": obj{"reason": "CrashLoopBackOff", "message": "back-off 40s restarting failed container"}}
		cs["lastState"] = obj{"terminated": obj{"reason": "OOMKilled", "exitCode": 137, "finishedAt": ts(t.Add(-20 * time.Second))}}
	}
	return obj{"apiVersion": "v1", "kind": "Pod",
		"metadata": meta(w, p.name, appNamespace, p.started, obj{"ownerReferences": []any{owner}, "labels": labels(s), "uid": p.uid}),
		"spec":     obj{"nodeName": p.node, "containers": []any{w.container(s, t)}},
		"status":   obj{"phase": phase, "podIP": p.ip, "startTime": ts(p.started), "containerStatuses": []any{cs}}}
}

// flagdConfig is the feature-flag ConfigMap; the flag fault turns one flag on.
func (w *world) flagdConfig(t time.Time) obj {
	var flags []string
	for _, svc := range []string{"ad", "cart", "payment", "product-catalog", "recommendation"} {
		name := featureFlags[svc]
		def := "off"
		if w.fault.kind == "flag" && name == w.fault.flag && !t.Before(w.faultAt) {
			def = "on"
		}
		flags = append(flags, fmt.Sprintf(`"%s":{"state":"ENABLED","variants":{"on":true,"off":false},"defaultVariant":"%s"}`, name, def))
	}
	return obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(w, "flagd-config", appNamespace, w.start.Add(-72*time.Hour), nil),
		"data": obj{"demo.flagd.json": `{"$schema":"https://flagd.dev/schema/v0/flags.json","flags":{` + joinComma(flags) + `}}`}}
}

func joinComma(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += ","
		}
		out += p
	}
	return out
}

// faultObjects are the objects the fault adds to the cluster.
func (w *world) faultObjects(t time.Time) []obj {
	f := w.fault
	if t.Before(w.faultAt.Add(-time.Minute)) {
		return nil
	}
	switch f.kind {
	case "netpol":
		if t.Before(w.faultAt) {
			return nil
		}
		return []obj{{"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
			"metadata": meta(w, f.rootName(), appNamespace, w.faultAt, nil),
			"spec":     obj{"podSelector": obj{"matchLabels": obj{"opentelemetry.io/name": f.victim}}, "policyTypes": []any{"Ingress"}, "ingress": []any{}}}}
	case "quota":
		return []obj{{"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta(w, f.rootName(), appNamespace, w.faultAt.Add(-time.Minute), nil),
			"spec":   obj{"hard": obj{"limits.memory": "5400Mi"}},
			"status": obj{"hard": obj{"limits.memory": "5400Mi"}, "used": obj{"limits.memory": "5400Mi"}}}}
	case "partition":
		if t.Before(w.faultAt) {
			return nil
		}
		spec := obj{"action": "partition", "mode": "all", "direction": "both",
			"selector": obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"opentelemetry.io/name": f.caller}},
			"target":   obj{"mode": "all", "selector": obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"opentelemetry.io/name": f.victim}}}}
		return []obj{
			{"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "Schedule", "metadata": meta(w, f.rootName(), chaosNamespace, w.faultAt, nil),
				"spec": obj{"schedule": "@every 2h", "type": "NetworkChaos", "historyLimit": 1, "concurrencyPolicy": "Forbid", "networkChaos": spec}},
			{"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "NetworkChaos", "metadata": meta(w, f.rootName(), chaosNamespace, w.faultAt,
				obj{"ownerReferences": []any{obj{"apiVersion": "chaos-mesh.org/v1alpha1", "kind": "Schedule", "name": f.rootName(), "controller": true}}}),
				"spec": spec, "status": obj{"experiment": obj{"desiredPhase": "Run"}}},
		}
	case "hpa":
		if t.Before(w.faultAt) {
			return nil
		}
		return []obj{{"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta(w, f.victim, appNamespace, w.faultAt, nil),
			"spec": obj{"scaleTargetRef": obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": f.victim}, "minReplicas": 1, "maxReplicas": 1,
				"metrics": []any{obj{"type": "Resource", "resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 10}}}}},
			"status": obj{"currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": []any{obj{"type": "Resource", "resource": obj{"name": "cpu", "current": obj{"averageUtilization": 480}}}}}}}
	}
	return nil
}
