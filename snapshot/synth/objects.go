package synth

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"path/filepath"
	"slices"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
)

type obj = map[string]any

func ts(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// versions hands out resourceVersions as the API server does: one number for the whole
// cluster, moved on by every write, so an object's version changes exactly when it does.
type versions struct {
	base, next int64
	seen       map[string]versionState
}

type versionState struct {
	sum uint64
	rv  int64
}

func (v *versions) bump() int64 {
	v.next += 3
	return v.next
}

// stamp sets o's resourceVersion: the one it had unless its body changed.
func (v *versions) stamp(o obj) {
	m := o["metadata"].(obj)
	b, _ := json.Marshal(o)
	h := fnv.New64a()
	h.Write(b)
	key := fmt.Sprint(o["kind"], "/", m["namespace"], "/", m["name"])
	st, ok := v.seen[key]
	if !ok || st.sum != h.Sum64() {
		st = versionState{sum: h.Sum64(), rv: v.bump()}
		v.seen[key] = st
	}
	m["resourceVersion"] = fmt.Sprint(st.rv)
}

// meta is an object's metadata; the resourceVersion is set when the dump is written.
func (w *world) meta(kind, name, namespace string, created time.Time, extra obj) obj {
	m := obj{"name": name, "uid": w.uidFor(kind, namespace, name), "creationTimestamp": ts(created),
		"managedFields": []any{obj{"apiVersion": "v1", "fieldsType": "FieldsV1",
			"fieldsV1": obj{"f:metadata": obj{"f:labels": obj{}}, "f:spec": obj{}}, "manager": "helm", "operation": "Update",
			"time": ts(created)}}}
	if namespace != "" {
		m["namespace"] = namespace
	}
	for k, v := range extra {
		m[k] = v
	}
	return m
}

func labels(s *service) obj {
	l := obj{"app.kubernetes.io/name": s.name, "app.kubernetes.io/component": s.name,
		"app.kubernetes.io/instance": s.namespace}
	if s.namespace == appNamespace {
		l["opentelemetry.io/name"] = s.name
		l["app.kubernetes.io/part-of"] = "opentelemetry-demo"
	}
	return l
}

// template is the pod template of s at revision r (the changes of every revision up to r).
func (w *world) template(s *service, r *revision, _ time.Time) obj {
	image, memory := s.image, "300Mi"
	var env []any
	annotations := obj{}
	var selector obj
	if s.namespace == appNamespace {
		env = append(env, obj{
			"name": "OTEL_SERVICE_NAME",
			"valueFrom": obj{
				"fieldRef": obj{"apiVersion": "v1", "fieldPath": "metadata.labels['app.kubernetes.io/component']"}},
		}, obj{"name": "OTEL_COLLECTOR_NAME", "value": "otel-collector"},
			obj{"name": "OTEL_EXPORTER_OTLP_ENDPOINT", "value": "http://$(OTEL_COLLECTOR_NAME):4317"})
		for _, dep := range s.calls {
			env = append(env, obj{"name": upperSnake(dep) + "_ADDR", "value": fmt.Sprintf("%s:%d", dep, portOf(dep))})
		}
	}
	for _, q := range s.revisions {
		if q.tweak != nil {
			tw := q.tweak
			if tw.image != "" {
				image = tw.image
			}
			if tw.memory != "" {
				memory = tw.memory
			}
			if tw.nodeSelector != nil {
				selector = tw.nodeSelector
			}
			if tw.restartedAt != "" {
				annotations["kubectl.kubernetes.io/restartedAt"] = tw.restartedAt
			}
			for i, e := range env {
				if e.(obj)["name"] == tw.envName {
					env[i] = obj{"name": tw.envName, "value": tw.envValue}
				}
			}
		}
		if q == r {
			break
		}
	}
	container := obj{"name": s.name, "image": image, "imagePullPolicy": "IfNotPresent",
		"resources":              obj{"limits": obj{"memory": memory}, "requests": obj{"memory": memory}},
		"terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
	if s.port > 0 {
		container["ports"] = []any{obj{"containerPort": s.port, "name": "service", "protocol": "TCP"}}
	}
	if env != nil {
		container["env"] = env
	}
	spec := obj{"containers": []any{container}, "restartPolicy": "Always", "schedulerName": "default-scheduler",
		"serviceAccountName": s.name, "terminationGracePeriodSeconds": 30}
	if selector != nil {
		spec["nodeSelector"] = selector
	}
	meta := obj{"labels": labels(s)}
	if len(annotations) > 0 {
		meta["annotations"] = annotations
	}
	return obj{"metadata": meta, "spec": spec}
}

// portOf is the port a shop service listens on.
func portOf(name string) int {
	for _, s := range shop {
		if s.name == name {
			return s.port
		}
	}
	return 0
}

// troubleAt is the trouble s's pod p is in at t, if any.
func (w *world) troubleAt(s *service, p pod, t time.Time) *trouble {
	for _, f := range w.faults {
		for i := range f.troubles {
			tr := &f.troubles[i]
			if tr.service != s.name || s.namespace != appNamespace || t.Before(tr.from) || tr.reason == "" {
				continue
			}
			if tr.revision != nil &&
				!slices.ContainsFunc(tr.revision.pods, func(q pod) bool { return q.name == p.name }) {
				continue
			}
			return tr
		}
	}
	return nil
}

// workloadObjects are a workload, its ReplicaSets, pods, Service, Endpoints and
// ServiceAccount at t.
func (w *world) workloadObjects(s *service, t time.Time) []obj {
	r := s.revisionAt(t)
	template := w.template(s, r, t)
	ready := 0
	var pods []obj
	var addresses, notReady []any
	for i, p := range r.pods {
		o, ok := w.podObject(s, p, i, t, template)
		pods = append(pods, o)
		address := obj{"ip": p.ip, "nodeName": p.node,
			"targetRef": obj{"kind": "Pod", "name": p.name, "namespace": s.namespace, "uid": p.uid}}
		if ok {
			ready++
			addresses = append(addresses, address)
		} else {
			notReady = append(notReady, address)
		}
	}
	generation := len(s.revisions[:slices.Index(s.revisions, r)+1]) + 2
	want := len(r.pods)
	if s.kind == "Deployment" {
		want = max(s.replicas, 1)
		if r.change == "scale" {
			want = len(r.pods)
		}
	}
	status := obj{"replicas": len(r.pods), "readyReplicas": ready, "availableReplicas": ready,
		"observedGeneration": generation}
	if ready < want {
		status["unavailableReplicas"] = want - ready
		delete(status, "availableReplicas")
	}
	spec := obj{"selector": obj{"matchLabels": obj{"app.kubernetes.io/name": s.name}}, "template": template}
	switch s.kind {
	case "Deployment":
		spec["replicas"], spec["revisionHistoryLimit"] = want, 10
		spec["strategy"] = obj{"type": "RollingUpdate", "rollingUpdate": obj{"maxSurge": "25%", "maxUnavailable": "25%"}}
	case "StatefulSet":
		spec["replicas"], spec["serviceName"] = want, s.name
	default:
		status = obj{"currentNumberScheduled": len(r.pods), "desiredNumberScheduled": len(r.pods), "numberReady": ready,
			"observedGeneration": generation}
	}
	out := []obj{{"apiVersion": "apps/v1", "kind": s.kind, "metadata": w.meta(s.kind, s.name, s.namespace, s.created, obj{
		"labels": labels(s), "generation": generation,
		"annotations": obj{"deployment.kubernetes.io/revision": fmt.Sprint(len(s.oldHashes) + generation - 2)}}),
		"spec": spec, "status": status}}
	if s.kind == "Deployment" {
		owner := []any{obj{"apiVersion": "apps/v1", "kind": "Deployment", "name": s.name,
			"uid": w.uidFor("Deployment", s.namespace, s.name), "controller": true, "blockOwnerDeletion": true}}
		hashes := slices.Clone(s.oldHashes)
		for _, q := range s.revisions {
			if !q.at.After(t) && !slices.Contains(hashes, q.hash) {
				hashes = append(hashes, q.hash)
			}
		}
		for _, h := range hashes {
			n, readyHere := 0, 0
			if h == r.hash {
				n, readyHere = want, ready
			}
			out = append(out, obj{"apiVersion": "apps/v1", "kind": "ReplicaSet",
				"metadata": w.meta("ReplicaSet", s.name+"-"+h, s.namespace, s.created, obj{"ownerReferences": owner,
					"labels": obj{"pod-template-hash": h, "app.kubernetes.io/name": s.name}}),
				"spec": obj{
					"replicas": n,
				}, "status": obj{"replicas": min(n, len(r.pods)), "readyReplicas": readyHere, "availableReplicas": readyHere,
					"observedGeneration": 1}})
		}
	}
	out = append(out, pods...)
	if s.kind != "DaemonSet" && s.port > 0 {
		out = append(out, obj{
			"apiVersion": "v1",
			"kind":       "Service",
			"metadata":   w.meta("Service", s.name, s.namespace, s.created, obj{"labels": labels(s)}),
			"spec": obj{"selector": obj{"app.kubernetes.io/name": s.name},
				"ports": []any{obj{"port": s.port, "targetPort": s.port, "name": "tcp-service", "protocol": "TCP"}},
				"type":  "ClusterIP", "clusterIP": fmt.Sprintf("172.20.%d.%d", len(s.name)*7%250, s.port%250)},
		})
		subset := obj{"ports": []any{obj{"name": "tcp-service", "port": s.port, "protocol": "TCP"}}}
		if addresses != nil {
			subset["addresses"] = addresses
		}
		if notReady != nil {
			subset["notReadyAddresses"] = notReady
		}
		out = append(out, obj{"apiVersion": "v1", "kind": "Endpoints",
			"metadata": w.meta("Endpoints", s.name, s.namespace, s.created, obj{"labels": labels(s)}), "subsets": []any{subset}})
	}
	out = append(out, obj{"apiVersion": "v1", "kind": "ServiceAccount",
		"metadata": w.meta("ServiceAccount", s.name, s.namespace, s.created, obj{"labels": labels(s)})})
	return out
}

// podObject is pod p at t and whether it is ready.
func (w *world) podObject(s *service, p pod, ordinal int, t time.Time, template obj) (obj, bool) {
	spec := template["spec"].(obj)
	container := spec["containers"].([]any)[0].(obj)
	podSpec := obj{"nodeName": p.node, "containers": []any{container}, "restartPolicy": "Always",
		"serviceAccountName": s.name}
	if sel, ok := spec["nodeSelector"]; ok {
		podSpec["nodeSelector"] = sel
	}
	restarts := 0
	if s.name == "kafka" || ordinal%7 == 3 {
		restarts = 1 + len(p.uid)%3 // restarted hours ago, long before anything else
	}
	cs := obj{"name": s.name, "image": container["image"], "imageID": "", "ready": true, "started": true,
		"restartCount": restarts, "state": obj{"running": obj{"startedAt": ts(p.started.Add(4 * time.Second))}}}
	phase, ready := "Running", true
	conditions := []any{obj{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(p.started)}}
	if tr := w.troubleAt(s, p, t); tr != nil && p.started.Before(t) {
		ready = false
		cs["ready"], cs["started"] = false, false
		switch tr.reason {
		case "ImagePullBackOff":
			phase = "Pending"
			cs["state"] = obj{"waiting": obj{"reason": "ImagePullBackOff",
				"message": fmt.Sprintf("Back-off pulling image %q", container["image"])}}
		case "CrashLoopBackOff":
			cs["restartCount"] = int(t.Sub(tr.from)/(90*time.Second)) + 1
			cs["state"] = obj{"waiting": obj{"reason": "CrashLoopBackOff",
				"message": fmt.Sprintf("back-off 2m40s restarting failed container=%s pod=%s_%s(%s)", s.name, p.name, s.namespace,
					p.uid)}}
			cs["lastState"] = obj{
				"terminated": obj{"reason": "OOMKilled", "exitCode": 137, "startedAt": ts(t.Add(-40 * time.Second)),
					"finishedAt": ts(t.Add(-20 * time.Second))}}
		case "Pending":
			phase = "Pending"
			conditions = []any{
				obj{"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": ts(p.started),
					"message": fmt.Sprintf("0/%d nodes are available: %d node(s) didn't match Pod's node affinity/selector.",
						len(w.nodes), len(w.nodes))},
			}
			delete(podSpec, "nodeName")
			cs = nil
		default: // NotReady
			cs["started"] = true
			cs["restartCount"] = restarts + int(t.Sub(tr.from)/(5*time.Minute))
		}
	}
	conditions = append(conditions,
		obj{"type": "Ready", "status": "True", "lastTransitionTime": ts(p.started.Add(6 * time.Second))})
	if !ready {
		conditions[len(conditions)-1] = obj{"type": "Ready", "status": "False", "reason": "ContainersNotReady",
			"lastTransitionTime": ts(p.started.Add(6 * time.Second))}
	}
	status := obj{"phase": phase, "podIP": p.ip, "hostIP": w.nodeIP(p.node), "startTime": ts(p.started),
		"conditions": conditions, "qosClass": "Burstable"}
	if cs != nil {
		status["containerStatuses"] = []any{cs}
	} else {
		delete(status, "podIP")
		delete(status, "hostIP")
	}
	owner := obj{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": s.name + "-" + p.hash, "controller": true,
		"blockOwnerDeletion": true}
	switch s.kind {
	case "StatefulSet", "DaemonSet":
		owner = obj{"apiVersion": "apps/v1", "kind": s.kind, "name": s.name, "controller": true, "blockOwnerDeletion": true}
	}
	owner["uid"] = w.uidFor(owner["kind"].(string), s.namespace, owner["name"].(string))
	lbl := labels(s)
	if p.hash != "" {
		lbl["pod-template-hash"] = p.hash
	}
	m := w.meta("Pod", p.name, s.namespace, p.started,
		obj{"ownerReferences": []any{owner}, "labels": lbl, "generateName": s.name + "-" + p.hash + "-"})
	m["uid"] = p.uid
	return obj{"apiVersion": "v1", "kind": "Pod", "metadata": m, "spec": podSpec, "status": status}, ready
}

func (w *world) nodeIP(name string) string {
	for _, n := range w.nodes {
		if n.name == name {
			return n.ip
		}
	}
	return ""
}

// objectsAt is one full dump of the cluster at t.
func (w *world) objectsAt(t time.Time) []obj {
	out := w.clusterObjects(t)
	for _, s := range w.services {
		out = append(out, w.workloadObjects(s, t)...)
	}
	out = append(out, w.flagdConfig(t))
	added := slices.Clone(w.decoys)
	for _, f := range w.faults {
		added = append(added, f.objects...)
	}
	for _, a := range added {
		if !t.Before(a.from) && (a.until.IsZero() || t.Before(a.until)) {
			out = append(out, a.build(t))
		}
	}
	return out
}

// writeObjects writes a full dump of the cluster every 5 minutes.
func (w *world) writeObjects(dir string) error {
	return writeTable(filepath.Join(dir, "k8s_objects_raw.tsv"), snapshot.Objects, func(out *snapshot.TSVWriter) error {
		for t := w.start.Add(7 * time.Second); t.Before(w.end); t = t.Add(5 * time.Minute) {
			for i, o := range w.objectsAt(t) {
				w.rv.stamp(o)
				m := o["metadata"].(obj)
				ns, _ := m["namespace"].(string)
				if err := k8sRow(out, t.Add(time.Duration(i)*137*time.Microsecond), ns, m["name"].(string),
					resourceName(o["kind"].(string)), o); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// resourceName is the API resource of a kind (Pod -> pods).
func resourceName(kind string) string {
	switch kind {
	case "NetworkPolicy":
		return "networkpolicies"
	case "Endpoints":
		return "endpoints"
	case "NetworkChaos", "StressChaos", "JVMChaos", "PodChaos", "HTTPChaos":
		return lower(kind)
	}
	return lower(kind) + "s"
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
