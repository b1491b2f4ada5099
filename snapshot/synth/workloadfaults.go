package synth

import (
	"fmt"
	"time"
)

// tweak is a change to a workload's pod template, rolled out as a new revision.
type tweak struct {
	image        string
	memory       string
	envName      string
	envValue     string
	nodeSelector obj
	restartedAt  string
}

// injectWorkload sets up the faults whose root cause is a workload, the namespace, an
// autoscaler or a network policy.
func (w *world) injectWorkload(f *fault) {
	s := w.byName[f.victim]
	svcGroup := gtGroup{id: f.victim + "-service-1", kind: "Service", namespace: appNamespace,
		filter: []string{f.victim + `\b`}}
	podGroup := gtGroup{id: f.victim + "-pod-1", kind: "Pod", namespace: appNamespace, filter: []string{f.victim + "-.*"}}
	deployGroup := gtGroup{id: f.victim + "-deployment-1", kind: "Deployment", namespace: appNamespace,
		filter: []string{f.victim + `\b`}}
	f.rootNS = appNamespace
	rollout := func(tw tweak, pods int, reason string) {
		r := w.rollOut(s, f.at, "fault", pods)
		r.tweak = &tw
		r.hash = templateHash(w.template(s, r, f.at))
		for i := range r.pods {
			r.pods[i].hash = r.hash
			r.pods[i].name = s.name + "-" + r.hash + "-" + w.suffix(5)
		}
		if reason != "" {
			f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, reason: reason, revision: r})
		}
		f.events = append(f.events, w.rolloutEvents(s, r)...)
		if reason == "" {
			for _, p := range r.pods {
				f.events = append(f.events, startEvents(s, p, s.image)...)
			}
		}
	}
	switch f.kind {
	case "bad-image":
		tag := pick(w, []string{"2.2.0-%s", "2.1.3-%s-arm64", "v2.1.3-%s", "2.1.3-%s-debug"})
		image := "ghcr.io/open-telemetry/demo:" + fmt.Sprintf(tag, f.victim)
		rollout(tweak{image: image}, 1, "ImagePullBackOff")
		f.effects = append(f.effects, effect{service: f.victim, mode: modeDown, from: f.at})
		p := s.revisions[len(s.revisions)-1].pods[0]
		w.recurring(f, event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Normal", reason: "Pulling",
			note: fmt.Sprintf("Pulling image %q", image), reporter: "kubelet"}, f.at.Add(4*time.Second), 5*time.Minute)
		w.recurring(f, event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Warning", reason: "Failed",
			note: fmt.Sprintf(
				"Failed to pull image %q: rpc error: code = NotFound desc = failed to pull and unpack image %q: failed to "+
					"resolve reference %q: %q: not found", image, image, image, image),
			reporter: "kubelet"}, f.at.Add(5*time.Second), 5*time.Minute)
		w.recurring(f, event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Normal", reason: "BackOff",
			note: fmt.Sprintf("Back-off pulling image %q",
				image), reporter: "kubelet"}, f.at.Add(20*time.Second), 40*time.Second)
		f.condition, f.mechanism = "Deployment image changed to a tag that does not exist", "custom"
		f.groups = []gtGroup{withRoot(deployGroup), svcGroup, podGroup}
		f.rootKind, f.rootName = "Deployment", f.victim
	case "oom":
		rollout(tweak{memory: pick(w, []string{"20Mi", "32Mi", "48Mi"})}, 1, "CrashLoopBackOff")
		f.effects = append(f.effects, effect{service: f.victim, mode: modeDown, from: f.at.Add(20 * time.Second)})
		p := s.revisions[len(s.revisions)-1].pods[0]
		w.recurring(f, event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Warning", reason: "BackOff",
			note: fmt.Sprintf("Back-off restarting failed container %s in pod %s_%s(%s)", s.name, p.name, appNamespace,
				p.uid), reporter: "kubelet"},
			f.at.Add(50*time.Second), 45*time.Second)
		f.condition, f.mechanism = "Memory limit lowered below the service's working set", "custom"
		f.groups = []gtGroup{withRoot(deployGroup), svcGroup, podGroup}
		f.rootKind, f.rootName = "Deployment", f.victim
	case "env":
		dep := s.calls[0]
		name := upperSnake(dep) + "_ADDR"
		value := pick(w,
			[]string{dep + ":0000", dep + "." + appNamespace + ":80", dep + "-svc:" + fmt.Sprint(w.byName[dep].port)})
		rollout(tweak{envName: name, envValue: value}, len(podsOf(s, f.at)), "")
		f.effects = append(f.effects,
			effect{service: f.victim, mode: modeFail, from: f.at.Add(10 * time.Second), rate: w.rate(0.5, 0.95),
				message: connectError(s.lang, value)})
		f.condition, f.mechanism = fmt.Sprintf("%s environment variable set to %s", name, value), "custom"
		f.groups = []gtGroup{withRoot(deployGroup), svcGroup, podGroup}
		f.rootKind, f.rootName = "Deployment", f.victim
	case "pod-pending":
		sel := pick(w, []obj{{"kubernetes.io/hostname": "i-0" + w.hex(16)}, {"topology.kubernetes.io/zone": "us-east-1f"},
			{"node.kubernetes.io/instance-type": "m7g.metal"}})
		rollout(tweak{nodeSelector: sel}, len(podsOf(s, f.at)), "Pending")
		f.effects = append(f.effects, effect{service: f.victim, mode: modeDown, from: f.at})
		for _, p := range s.revisions[len(s.revisions)-1].pods {
			n := len(w.nodes)
			w.recurring(f, event{kind: "Pod", namespace: appNamespace, name: p.name, typ: "Warning", reason: "FailedScheduling",
				note: fmt.Sprintf(
					"0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector. preemption: 0/%d nodes are "+
						"available: %d Preemption is not helpful for scheduling.", n, n, n, n),
				reporter: "default-scheduler"}, f.at.Add(time.Second), 5*time.Minute)
		}
		f.condition, f.mechanism = "Pods cannot be scheduled: the node selector matches no node", "invalid-node-selector"
		f.groups = []gtGroup{withRoot(podGroup), svcGroup}
		f.rootKind, f.rootName = "Pod", s.revisions[len(s.revisions)-1].pods[0].name
	case "quota":
		quota := pick(w, []string{"otel-demo-memory-quota", "mem-cpu-quota", "compute-resources"})
		used := 300 * len(w.callers("frontend"))
		f.objects = append(f.objects, addedObject{from: f.at.Add(-time.Minute), build: func(time.Time) obj {
			return obj{
				"apiVersion": "v1",
				"kind":       "ResourceQuota",
				"metadata":   w.meta("ResourceQuota", quota, appNamespace, f.at.Add(-time.Minute), nil),
				"spec": obj{
					"hard": obj{"limits.memory": fmt.Sprintf("%dMi", used), "requests.memory": fmt.Sprintf("%dMi", used/2)}},
				"status": obj{
					"hard": obj{"limits.memory": fmt.Sprintf("%dMi", used), "requests.memory": fmt.Sprintf("%dMi", used/2)},
					"used": obj{"limits.memory": fmt.Sprintf("%dMi", used), "requests.memory": fmt.Sprintf("%dMi", used/2)}},
			}
		}})
		rollout(tweak{restartedAt: ts(f.at)}, 0, "")
		f.effects = append(f.effects, effect{service: f.victim, mode: modeDown, from: f.at})
		rs := s.name + "-" + s.revisions[len(s.revisions)-1].hash
		w.recurring(f, event{
			kind:       "ReplicaSet",
			apiVersion: "apps/v1",
			namespace:  appNamespace,
			name:       rs,
			typ:        "Warning",
			reason:     "FailedCreate",
			note: fmt.Sprintf("Error creating: pods %q is forbidden: exceeded quota: %s, requested: limits.memory=300Mi, used: "+
				"limits.memory=%dMi, limited: limits.memory=%dMi", rs+"-"+w.suffix(5), quota, used, used),
			reporter: "replicaset-controller",
		}, f.at.Add(2*time.Second), 3*time.Minute)
		f.condition, f.mechanism = "Memory quota imposed on namespace preventing pod scheduling", "resource_quota_enforcement"
		nsGroup := gtGroup{id: "otel-demo-namespace-1", kind: "Namespace", root: true}
		if w.rng.IntN(2) == 0 {
			nsGroup.filter = []string{appNamespace}
		} else {
			nsGroup.name, nsGroup.namespace = appNamespace, appNamespace
		}
		f.groups = []gtGroup{nsGroup, {id: quota, kind: "ResourceQuota", namespace: appNamespace, name: quota}, deployGroup,
			svcGroup, podGroup}
		f.rootKind, f.rootNS, f.rootName = "Namespace", "", appNamespace
	case "hpa":
		first := s.revisions[0]
		for len(first.pods) < 3 {
			first.pods = append(first.pods, w.newPod(s, first, len(first.pods), first.pods[0].started))
		}
		s.replicas = 3
		capped := &revision{at: f.at.Add(15 * time.Second), hash: first.hash, change: "scale", pods: first.pods[:1],
			tweak: first.tweak}
		s.revisions = append(s.revisions, capped)
		w.slowdown(f, f.victim, 0.7, time.Duration(800+w.rng.IntN(1500))*time.Millisecond)
		f.troubles = append(f.troubles, trouble{service: f.victim, from: f.at, cpu: 0.5})
		f.objects = append(f.objects, addedObject{from: f.at, build: func(time.Time) obj {
			return obj{
				"apiVersion": "autoscaling/v2",
				"kind":       "HorizontalPodAutoscaler",
				"metadata":   w.meta("HorizontalPodAutoscaler", f.victim, appNamespace, f.at, nil),
				"spec": obj{"scaleTargetRef": obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": f.victim},
					"minReplicas": 1, "maxReplicas": 1, "metrics": []any{obj{"type": "Resource",
						"resource": obj{"name": "cpu", "target": obj{"type": "Utilization", "averageUtilization": 10}}}}},
				"status": obj{"currentReplicas": 1, "desiredReplicas": 1, "currentMetrics": []any{
					obj{"type": "Resource", "resource": obj{"name": "cpu", "current": obj{"averageUtilization": 480}}}}},
			}
		}})
		f.events = append(f.events, event{
			at:         f.at.Add(15 * time.Second),
			kind:       "HorizontalPodAutoscaler",
			apiVersion: "autoscaling/v2",
			namespace:  appNamespace,
			name:       f.victim,
			typ:        "Normal",
			reason:     "SuccessfulRescale",
			note:       "New size: 1; reason: Current number of replicas above Spec.MaxReplicas",
			reporter:   "horizontal-pod-autoscaler",
		}, event{
			at:         f.at.Add(16 * time.Second),
			kind:       "Deployment",
			apiVersion: "apps/v1",
			namespace:  appNamespace,
			name:       f.victim,
			typ:        "Normal",
			reason:     "ScalingReplicaSet",
			note:       fmt.Sprintf("Scaled down replica set %s-%s from 3 to 1", s.name, first.hash),
			reporter:   "deployment-controller",
		})
		f.condition, f.mechanism = "Misconfigured HPA", "custom"
		f.groups = []gtGroup{
			{id: f.victim + "-horizontal-pod-autoscaler-1", kind: "HorizontalPodAutoscaler", namespace: appNamespace,
				filter: []string{f.victim + `\b`}, root: true}, svcGroup}
		f.rootKind, f.rootName = "HorizontalPodAutoscaler", f.victim
	case "netpol":
		name := fmt.Sprintf(pick(w, []string{"%s-block-all-ports", "deny-%s-ingress", "%s-isolation"}), f.victim)
		f.effects = append(f.effects, effect{service: f.victim, mode: modeCut, from: f.at, rate: 1})
		f.objects = append(f.objects, addedObject{from: f.at, build: func(time.Time) obj {
			return obj{
				"apiVersion": "networking.k8s.io/v1",
				"kind":       "NetworkPolicy",
				"metadata":   w.meta("NetworkPolicy", name, appNamespace, f.at, nil),
				"spec": obj{"podSelector": obj{"matchLabels": obj{"app.kubernetes.io/name": f.victim}},
					"policyTypes": []any{"Ingress", "Egress"}},
			}
		}})
		f.condition, f.mechanism = fmt.Sprintf("NetworkPolicy blocks all ingress traffic to %s pods",
			f.victim), "misconfigured-network-policy"
		f.groups = []gtGroup{{id: name, kind: "NetworkPolicy", namespace: appNamespace, filter: []string{name}, root: true},
			podGroup, svcGroup}
		f.rootKind, f.rootName = "NetworkPolicy", name
	}
	f.actions = []string{"Revert the change to " + f.rootEntity()}
}

func withRoot(g gtGroup) gtGroup {
	g.root = true
	return g
}

// connectError is how a service written in lang reports a refused connection to addr.
func connectError(lang, addr string) string {
	switch lang {
	case "go":
		return fmt.Sprintf(`rpc error: code = Unavailable desc = connection error: `+
			`desc = "transport: Error while dialing: dial tcp %s: connect: connection refused"`, addr)
	case "python":
		return fmt.Sprintf("<_InactiveRpcError of RPC that terminated with:\n\tstatus = StatusCode.UNAVAILABLE\n\t"+
			"details = \"failed to connect to all addresses; last error: UNKNOWN: ipv4:%s: Failed to connect to remote host: "+
			"Connection refused\"\n>", addr)
	case "nodejs":
		return fmt.Sprintf("14 UNAVAILABLE: No connection established. Last error: connect ECONNREFUSED %s", addr)
	case "dotnet":
		return fmt.Sprintf(`Status(StatusCode="Unavailable", Detail="Error connecting to subchannel.", `+
			`DebugException="System.Net.Sockets.SocketException (111): Connection refused (%s)")`, addr)
	case "rust":
		return fmt.Sprintf(
			"transport error: error trying to connect: tcp connect error: Connection refused (os error 111) (%s)", addr)
	}
	return fmt.Sprintf("connect ECONNREFUSED %s", addr)
}
