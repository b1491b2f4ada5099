package synth

import (
	"fmt"
	"sort"
	"time"
)

// noiseRollout is a restart of a shop service during the window (kubectl rollout restart)
// that is not the fault: an unrelated one, or an operator's attempt at a fix.
type noiseRollout struct {
	service *service
	rev     *revision
}

// finishedChaos is a chaos experiment of an earlier test, over before the window.
type finishedChaos struct {
	kind, name, target string
	created            time.Time
}

var namespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease", appNamespace, chaosNamespace,
	"monitoring", "ingress-nginx"}

// prepareNoise lays out what happens in the cluster whatever the fault: a rollout restart of
// a service the faults do not touch, at a random time (before or after them), which upsets
// its callers for a minute or two, and the decoys on the fault's own path.
func (w *world) prepareNoise() {
	var candidates []*service
	for _, s := range w.services {
		if s.namespace == appNamespace && s.kind == "Deployment" && !w.touched(s.name) && s.name != "flagd" &&
			len(w.callers(s.name)) > 0 {
			candidates = append(candidates, s)
		}
	}
	s := pick(w, candidates)
	at := w.start.Add(time.Duration(2*60+w.rng.IntN(25*60)) * time.Second)
	w.rollouts = append(w.rollouts, w.restart(s, at))
	w.restartBlip(s, at)
	w.prepareDecoys()
}

// restart rolls s out again at t with only its restartedAt annotation changed.
func (w *world) restart(s *service, at time.Time) *noiseRollout {
	r := w.rollOut(s, at, "restart", len(podsOf(s, at)))
	r.tweak = &tweak{restartedAt: ts(at)}
	r.hash = templateHash(w.template(s, r, at))
	for i := range r.pods {
		r.pods[i].hash = r.hash
		r.pods[i].name = s.name + "-" + r.hash + "-" + w.suffix(5)
	}
	return &noiseRollout{service: s, rev: r}
}

// touched reports whether a fault strikes the service.
func (w *world) touched(name string) bool {
	for _, f := range w.faults {
		if f.victim == name {
			return true
		}
		for _, e := range f.effects {
			if e.service == name {
				return true
			}
		}
	}
	return false
}

// finished lists two chaos experiments of earlier tests, finished long before the window.
func (w *world) finished() []finishedChaos {
	seed := w.start.Unix()
	targets := []string{"frontend", "cart", "currency", "ad", "email", "quote", "payment"}
	a, b := targets[seed%int64(len(targets))], targets[(seed/7)%int64(len(targets))]
	return []finishedChaos{
		{kind: "PodChaos", name: appNamespace + "-" + a + "-pod-kill", target: a, created: w.start.Add(-26 * time.Hour)},
		{kind: "StressChaos", name: appNamespace + "-" + b + "-cpu-stress", target: b, created: w.start.Add(-49 * time.Hour)},
	}
}

// clusterObjects are the objects of the cluster's own namespaces and of the noise.
func (w *world) clusterObjects(t time.Time) []obj {
	var out []obj
	created := w.start.Add(-30 * 24 * time.Hour)
	for _, ns := range namespaces {
		labels := obj{"labels": obj{"kubernetes.io/metadata.name": ns}}
		out = append(out, obj{"apiVersion": "v1", "kind": "Namespace",
			"metadata": w.meta("Namespace", ns, "", created, labels),
			"spec":     obj{"finalizers": []any{"kubernetes"}}, "status": obj{"phase": "Active"}})
		meta := w.meta("ConfigMap", "kube-root-ca.crt", ns, created, nil) // before the ca's uid, as the draws go
		cert := "-----BEGIN CERTIFICATE-----\nMIIDBTCCAe2gAwIBAgIIE" + w.uidFor("ca", "", "")[:8] +
			"\n-----END CERTIFICATE-----\n"
		out = append(out, obj{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": obj{"ca.crt": cert}})
	}
	for i, n := range w.nodes {
		beat := ts(t.Add(-time.Duration(5+i*11) * time.Second))
		cond := func(typ, status, reason string) obj {
			return obj{"type": typ, "status": status, "reason": reason, "lastHeartbeatTime": beat,
				"lastTransitionTime": ts(created)}
		}
		labels := obj{"labels": obj{"kubernetes.io/hostname": n.name, "topology.kubernetes.io/zone": n.zone,
			"node.kubernetes.io/instance-type": "m5.xlarge", "kubernetes.io/os": "linux"}}
		out = append(out, obj{"apiVersion": "v1", "kind": "Node", "metadata": w.meta("Node", n.name, "", created, labels),
			"spec": obj{"providerID": "aws:///" + n.zone + "/" + n.name},
			"status": obj{"conditions": []any{cond("MemoryPressure", "False", "KubeletHasSufficientMemory"),
				cond("DiskPressure", "False", "KubeletHasNoDiskPressure"),
				cond("PIDPressure", "False", "KubeletHasSufficientPID"), cond("Ready", "True", "KubeletReady")},
				"addresses": []any{obj{"type": "InternalIP", "address": n.ip}},
				"capacity":  obj{"cpu": "4", "memory": "16069568Ki", "pods": "58"},
				"nodeInfo": obj{"kubeletVersion": "v1.32.1-eks-5d632ec", "containerRuntimeVersion": "containerd://1.7.25",
					"osImage": "Amazon Linux 2023.6.20250203"}}})
		out = append(out, w.lease("kube-node-lease", n.name, t, 40))
	}
	for _, l := range []struct{ ns, name string }{{"kube-system", "kube-controller-manager"},
		{"kube-system", "kube-scheduler"}, {"kube-system", "cloud-controller-manager"}, {chaosNamespace, "chaos-mesh"},
		{"ingress-nginx", "ingress-nginx-leader"}, {"monitoring", "prometheus-operator-lock"}} {
		out = append(out, w.lease(l.ns, l.name, t, 15))
	}
	// The cluster autoscaler rewrites its status ConfigMap on every loop.
	updated := t.Add(-3 * time.Second)
	annotations := obj{"annotations": obj{
		"cluster-autoscaler.kubernetes.io/last-updated": updated.Format("2006-01-02 15:04:05.999999999 -0700 MST")}}
	status := fmt.Sprintf("time: %s\nautoscalerStatus: Running\nclusterWide:\n  health:\n    status: Healthy\n"+
		"    nodeCounts:\n      registered:\n        total: %d\n        ready: %d\n    lastProbeTime: \"%s\"\n",
		updated.Format(time.RFC3339Nano), len(w.nodes), len(w.nodes), updated.Format(time.RFC3339Nano))
	out = append(out, obj{"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": w.meta("ConfigMap", "cluster-autoscaler-status", "kube-system", created, annotations),
		"data":     obj{"status": status}})
	for _, cm := range []struct{ ns, name, key, value string }{
		{"kube-system", "coredns", "Corefile", ".:53 {\n    errors\n    health {\n        lameduck 5s\n      }\n    ready\n" +
			"    kubernetes cluster.local in-addr.arpa ip6.arpa {\n      pods insecure\n" +
			"      fallthrough in-addr.arpa ip6.arpa\n    }\n    prometheus :9153\n    forward . /etc/resolv.conf\n" +
			"    cache 30\n    loop\n    reload\n    loadbalance\n}\n"},
		{"kube-system", "kube-proxy", "config", "apiVersion: kubeproxy.config.k8s.io/v1alpha1\n" +
			"kind: KubeProxyConfiguration\nmode: \"iptables\"\n"},
		{"kube-system", "aws-auth", "mapRoles", "- groups:\n  - system:bootstrappers\n  - system:nodes\n" +
			"  rolearn: arn:aws:iam::123456789012:role/eks-node\n  username: system:node:{{EC2PrivateDNSName}}\n"},
		{"ingress-nginx", "ingress-nginx-controller", "allow-snippet-annotations", "false"},
		{appNamespace, "otel-collector", "relay", "exporters:\n  debug: {}\n  otlp:\n    endpoint: jaeger-collector:4317\n" +
			"processors:\n  batch: {}\n  k8sattributes: {}\n"},
		{appNamespace, "product-catalog-products", "products.json", "{\n  \"products\": [\n    {\n" +
			"      \"id\": \"OLJCESPC7Z\",\n      \"name\": \"National Park Foundation Explorascope\"\n    }\n  ]\n}\n"},
		{"monitoring", "prometheus-grafana", "grafana.ini", "[analytics]\ncheck_for_updates = true\n[log]\nmode = console\n"},
		{chaosNamespace, "chaos-mesh", "controller.yaml", "clusterScoped: true\nenableFilterNamespace: false\n"},
	} {
		out = append(out, obj{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": w.meta("ConfigMap", cm.name, cm.ns, w.start.Add(-20*24*time.Hour), nil), "data": obj{cm.key: cm.value}})
	}
	// An autoscaler the shop has always had, whose status moves with the load.
	load := 30 + int(t.Sub(w.start).Minutes()*3)%40
	out = append(out, obj{
		"apiVersion": "autoscaling/v2",
		"kind":       "HorizontalPodAutoscaler",
		"metadata":   w.meta("HorizontalPodAutoscaler", "frontend-proxy", appNamespace, w.start.Add(-72*time.Hour), nil),
		"spec": obj{"scaleTargetRef": obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": "frontend-proxy"},
			"minReplicas": 1, "maxReplicas": 3, "metrics": []any{obj{"type": "Resource",
				"resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 80}}}}},
		"status": obj{"currentReplicas": 1, "desiredReplicas": 1, "lastScaleTime": ts(w.start.Add(-5 * time.Hour)),
			"currentMetrics": []any{
				obj{"type": "Resource", "resource": obj{"name": "cpu", "current": obj{"averageUtilization": load}}}}},
	})
	out = append(out, obj{
		"apiVersion": "v1",
		"kind":       "LimitRange",
		"metadata":   w.meta("LimitRange", "otel-demo-limits", appNamespace, w.start.Add(-48*time.Hour), nil),
		"spec": obj{"limits": []any{
			obj{"type": "Container", "default": obj{"memory": "300Mi"}, "defaultRequest": obj{"memory": "100Mi"}}}},
	})
	out = append(out, obj{
		"apiVersion": "networking.k8s.io/v1",
		"kind":       "NetworkPolicy",
		"metadata":   w.meta("NetworkPolicy", "allow-otel-demo-internal", appNamespace, w.start.Add(-48*time.Hour), nil),
		"spec": obj{"podSelector": obj{}, "policyTypes": []any{"Ingress"},
			"ingress": []any{
				obj{"from": []any{obj{"namespaceSelector": obj{"matchLabels": obj{"kubernetes.io/metadata.name": appNamespace}}}}},
			}},
	})
	const prometheusDB = "prometheus-prometheus-kube-prometheus-prometheus-db-" +
		"prometheus-prometheus-kube-prometheus-prometheus-0"
	for _, pvc := range []struct{ ns, name string }{{appNamespace, "data-kafka-0"}, {"monitoring", prometheusDB}} {
		out = append(out, obj{
			"apiVersion": "v1",
			"kind":       "PersistentVolumeClaim",
			"metadata":   w.meta("PersistentVolumeClaim", pvc.name, pvc.ns, w.start.Add(-72*time.Hour), nil),
			"spec": obj{"accessModes": []any{"ReadWriteOnce"}, "resources": obj{"requests": obj{"storage": "8Gi"}},
				"storageClassName": "gp2", "volumeName": "pvc-" + w.uidFor("pv", pvc.ns, pvc.name)},
			"status": obj{"phase": "Bound"},
		})
	}
	for _, c := range w.finished() {
		out = append(out, obj{
			"apiVersion": chaosAPI,
			"kind":       c.kind,
			"metadata":   w.meta(c.kind, c.name, chaosNamespace, c.created, obj{"finalizers": []any{}}),
			"spec": obj{"mode": "all",
				"selector": obj{"namespaces": []any{appNamespace}, "labelSelectors": obj{"app.kubernetes.io/name": c.target}},
				"duration": "10m"},
			"status": obj{
				"conditions": []any{obj{"type": "Selected", "status": "True"}, obj{"type": "AllInjected", "status": "False"},
					obj{"type": "AllRecovered", "status": "True"}, obj{"type": "Paused", "status": "False"}},
				"experiment": obj{"desiredPhase": "Stop", "containerRecords": []any{}},
			},
		})
	}
	return out
}

// lease is a leader-election or heartbeat Lease, renewed every few seconds.
func (w *world) lease(ns, name string, t time.Time, seconds int) obj {
	holder := name
	if ns != "kube-node-lease" {
		holder = name + "_" + w.uidFor("holder", ns, name)
	}
	return obj{
		"apiVersion": "coordination.k8s.io/v1",
		"kind":       "Lease",
		"metadata":   w.meta("Lease", name, ns, w.start.Add(-30*24*time.Hour), nil),
		"spec": obj{"holderIdentity": holder, "leaseDurationSeconds": seconds,
			"renewTime": t.Add(-time.Duration(len(name)%seconds) * time.Second).Format("2006-01-02T15:04:05.000000Z")},
	}
}

// noiseEvents are the events of a cluster where nothing is wrong: ingress reloads, a
// readiness probe that fails now and then, an autoscaler that cannot read a metric, and the
// unrelated rollout.
func (w *world) noiseEvents() []event {
	ingress := podsOf(w.byName["ingress-nginx/ingress-nginx-controller"], w.start)[0]
	out := w.repeat(event{kind: "Pod", namespace: "ingress-nginx", name: ingress.name, typ: "Normal", reason: "RELOAD",
		note: "NGINX reload triggered due to a change in configuration", reporter: "nginx-ingress-controller"},
		w.start.Add(-23*time.Hour), 4*time.Hour)
	for i := range out {
		out[i].at = w.start.Add(time.Duration(70+i*400) * time.Second)
		out[i].count += 11
	}
	shaky := pick(w, []string{"opensearch", "accounting", "fraud-detection", "kafka"})
	if s := w.byName[shaky]; s != nil {
		p := podsOf(s, w.start)[0]
		refused := "Readiness probe failed: dial tcp " + p.ip + ":" + fmt.Sprint(s.port) + ": connect: connection refused"
		out = append(out, w.repeat(event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Warning",
			reason: "Unhealthy", note: refused, reporter: "kubelet"},
			w.start.Add(time.Duration(w.rng.IntN(300))*time.Second), 6*time.Minute)...)
	}
	out = append(out, w.repeat(event{kind: "HorizontalPodAutoscaler", apiVersion: "autoscaling/v2",
		namespace: appNamespace, name: "frontend-proxy", typ: "Warning", reason: "FailedGetResourceMetric",
		reporter: "horizontal-pod-autoscaler",
		note: "failed to get cpu utilization: unable to get metrics for resource cpu: " +
			"no metrics returned from resource metrics API"},
		w.start.Add(time.Duration(w.rng.IntN(600))*time.Second), 9*time.Minute)...)
	for _, n := range w.nodes[:1] {
		out = append(out, event{at: w.start.Add(time.Duration(w.rng.IntN(1500)) * time.Second), kind: "Node", name: n.name,
			typ: "Normal", reason: "NodeHasSufficientMemory", note: "Node " + n.name + " status is now: NodeHasSufficientMemory",
			reporter: "kubelet"})
	}
	for _, r := range w.rollouts {
		out = append(out, w.rolloutEvents(r.service, r.rev)...)
		for _, p := range r.rev.pods {
			out = append(out, startEvents(r.service, p, r.service.image)...)
		}
	}
	out = append(out, w.decoyEvents...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// noiseAlerts are the alerts firing in any cluster of the benchmark: the Watchdog, the
// InfoInhibitor, an apiserver client certificate about to expire, and CPU throttling of one
// shop pod.
func (w *world) noiseAlerts(t time.Time) []alert {
	boot := w.start.Add(-7 * time.Minute).Add(932996249 * time.Nanosecond)
	out := []alert{
		{labels: map[string]string{"alertname": "Watchdog", "severity": "none"}, activeAt: boot, value: 1,
			description: "This is an alert meant to ensure that the entire alerting pipeline is functional.\n" +
				"This alert is always firing, therefore it should always be firing in Alertmanager\n" +
				"and always fire against a receiver. There are integrations with various notification\n" +
				"mechanisms that send a notification when this alert is not firing. For example the\n" +
				"\"DeadMansSnitch\" integration in PagerDuty.\n",
			runbook: "https://runbooks.prometheus-operator.dev/runbooks/general/watchdog", summary: "An alert that should " +
				"always be firing to certify that Alertmanager is working properly."},
	}
	if t.After(w.start.Add(4 * time.Minute)) {
		out = append(out, alert{
			labels: map[string]string{"alertname": "InfoInhibitor", "alertstate": "pending", "container": "neo4j",
				"instance": w.nodes[0].ip + ":10250", "namespace": "kube-system", "pod": "topology-monitor-0",
				"service": "prometheus-kube-prometheus-kubelet", "severity": "none"},
			activeAt: boot.Add(4*time.Minute + 30*time.Second),
			value:    1,
			description: "This is an alert that is used to inhibit info alerts.\nBy themselves, the info-level alerts are " +
				"sometimes very noisy, but they are relevant when combined with\nother alerts.\n" +
				"This alert fires whenever there's a severity=\"info\" alert, and stops firing when another alert with a\n" +
				"severity of 'warning' or 'critical' starts firing on the same namespace.\n" +
				"This alert should be routed to a null receiver and configured to inhibit alerts with severity=\"info\".\n",
			runbook: "https://runbooks.prometheus-operator.dev/runbooks/general/infoinhibitor",
			summary: "Info-level alert inhibition.",
		})
	}
	cert := boot.Add(45*time.Second + 763105407*time.Nanosecond)
	for _, c := range []struct{ severity, within string }{{"warning", "7.0 days"}, {"critical", "24.0 hours"}} {
		out = append(out, alert{
			labels: map[string]string{"alertname": "KubeClientCertificateExpiration", "instance": "10.0.185.154:443",
				"job": "apiserver", "severity": c.severity},
			activeAt: cert,
			value:    44037.17260273972,
			description: "A client certificate used to authenticate to kubernetes apiserver is expiring in less than " +
				c.within + " on cluster .",
			runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/kubeclientcertificateexpiration",
			summary: "Client certificate is about to expire.",
		})
	}
	var shop []*service
	for _, s := range w.services {
		if s.namespace == appNamespace && s.traced && !w.touched(s.name) && s.name != "load-generator" {
			shop = append(shop, s)
		}
	}
	throttled := shop[int(w.start.Unix()/60)%len(shop)]
	if p := podsOf(throttled, t); len(p) > 0 {
		out = append(out, alert{
			labels: map[string]string{"alertname": "CPUThrottlingHigh", "container": throttled.name, "namespace": appNamespace,
				"pod": p[0].name, "severity": "info"},
			activeAt: w.start.Add(-31 * time.Minute).Add(118604221 * time.Nanosecond),
			value:    0.3125,
			description: fmt.Sprintf("31.25%% throttling of CPU in namespace %s for container %s in pod %s on cluster .",
				appNamespace, throttled.name, p[0].name),
			runbook: "https://runbooks.prometheus-operator.dev/runbooks/kubernetes/cputhrottlinghigh",
			summary: "Processes experience elevated CPU throttling.",
		})
	}
	return out
}
