// Package synth generates complete benchmark tasks in exactly the real snapshot formats: a
// simulated OpenTelemetry demo shop on a Kubernetes cluster with its monitoring, ingress and
// chaos-mesh namespaces, one or two injected faults drawn from the real benchmark's mix,
// background noise that has nothing to do with the fault, coherent evidence across alerts,
// events, object dumps, logs, traces and metrics, and a ground truth in the real schema.
// Generation is deterministic for a seed.
package synth

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"strings"
	"time"
)

// Namespaces of the simulated cluster.
const (
	appNamespace   = "otel-demo"
	chaosNamespace = "chaos-mesh"
)

// serviceSpec describes one service of the shop: what it calls, its language, how many
// replicas it runs and whether it writes spans.
type serviceSpec struct {
	name     string
	calls    []string
	lang     string
	replicas int
	stateful bool // a StatefulSet rather than a Deployment
	port     int
	traced   bool // writes spans (valkey, kafka and postgresql do not)
	http     bool // serves HTTP rather than gRPC
}

// shop is the simulated application, modelled on the OpenTelemetry demo 2.1.
var shop = []serviceSpec{
	{name: "load-generator", calls: []string{"frontend-proxy"}, lang: "python", replicas: 1, port: 8089, traced: true,
		http: true},
	{name: "frontend-proxy", calls: []string{"frontend", "image-provider", "flagd"}, lang: "cpp", replicas: 1, port: 8080,
		traced: true, http: true},
	{name: "frontend",
		calls: []string{"ad", "cart", "checkout", "currency", "product-catalog", "recommendation", "shipping"},
		lang:  "nodejs", replicas: 1, port: 8080, traced: true, http: true},
	{name: "image-provider", lang: "cpp", replicas: 1, port: 8081, traced: true, http: true},
	{name: "ad", calls: []string{"flagd"}, lang: "java", replicas: 1, port: 9555, traced: true},
	{name: "cart", calls: []string{"valkey-cart", "flagd"}, lang: "dotnet", replicas: 1, port: 7070, traced: true},
	{name: "valkey-cart", lang: "c", replicas: 1, port: 6379},
	{name: "checkout", calls: []string{"cart", "currency", "email", "payment", "product-catalog", "shipping", "kafka"},
		lang: "go", replicas: 1, port: 5050, traced: true},
	{name: "currency", lang: "cpp", replicas: 1, port: 7001, traced: true},
	{name: "email", lang: "ruby", replicas: 1, port: 6060, traced: true, http: true},
	{name: "payment", calls: []string{"flagd"}, lang: "nodejs", replicas: 1, port: 50051, traced: true},
	{name: "product-catalog", calls: []string{"flagd"}, lang: "go", replicas: 1, port: 3550, traced: true},
	{name: "recommendation", calls: []string{"product-catalog", "flagd"}, lang: "python", replicas: 1, port: 9001,
		traced: true},
	{name: "shipping", calls: []string{"quote"}, lang: "rust", replicas: 1, port: 50050, traced: true},
	{name: "quote", lang: "php", replicas: 1, port: 8090, traced: true, http: true},
	{name: "kafka", lang: "java", replicas: 1, port: 9092},
	{name: "accounting", calls: []string{"kafka", "postgresql"}, lang: "dotnet", replicas: 1, port: 8080, traced: true},
	{name: "fraud-detection", calls: []string{"kafka"}, lang: "java", replicas: 1, port: 8080, traced: true},
	{name: "postgresql", lang: "c", replicas: 1, port: 5432},
	{name: "flagd", lang: "go", replicas: 1, port: 8013, traced: true},
	{name: "otel-collector", lang: "go", replicas: 1, port: 4317},
}

// pod is one pod of a workload.
type pod struct {
	name, node, uid, ip string
	hash                string // pod-template-hash ("" for StatefulSet and DaemonSet pods)
	started             time.Time
}

// revision is one pod template of a workload and the pods it runs from a time on.
type revision struct {
	at     time.Time
	hash   string
	change string // what changed: "" for the first revision
	tweak  *tweak // the template change, nil for none
	pods   []pod
}

// service is a workload of the simulated cluster: a shop service or an infrastructure one.
type service struct {
	serviceSpec
	namespace string
	kind      string // Deployment, StatefulSet or DaemonSet
	image     string
	revisions []*revision // in time order; the first may predate the window
	oldHashes []string    // ReplicaSets of earlier rollouts, scaled to zero
	created   time.Time
}

// world is the whole simulated cluster and its timeline.
type world struct {
	rng         *rand.Rand
	start       time.Time // first record
	end         time.Time // last record
	nodes       []node
	services    []*service // shop services first
	byName      map[string]*service
	faults      []*fault
	rollouts    []*noiseRollout // rollout restarts during the window that are not the fault
	blips       []effect        // what the restarts do to calls for a minute or two
	decoys      []addedObject   // objects created during the window that harm nothing
	decoyEvents []event
	uids        map[string]string
	rv          *versions
	counts      map[string]map[int64]*minuteCounts // service -> minute -> server calls
	large       bool
}

type node struct{ name, ip, zone string }

// k8sAlphabet is the alphabet Kubernetes draws generated name suffixes from.
const k8sAlphabet = "bcdfghjklmnpqrstvwxz2456789"

func (w *world) suffix(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = k8sAlphabet[w.rng.IntN(len(k8sAlphabet))]
	}
	return string(b)
}

func (w *world) hex(n int) string {
	const digits = "0123456789abcdef"
	b := make([]byte, n)
	for i := range b {
		b[i] = digits[w.rng.IntN(16)]
	}
	return string(b)
}

// uid is a random (version 4) UUID, as the API server assigns.
func (w *world) uid() string {
	h := []byte(w.hex(32))
	h[12] = '4'
	h[16] = "89ab"[w.rng.IntN(4)]
	s := string(h)
	return s[:8] + "-" + s[8:12] + "-" + s[12:16] + "-" + s[16:20] + "-" + s[20:]
}

// uidFor gives an object the same uid in every dump.
func (w *world) uidFor(kind, namespace, name string) string {
	key := kind + "/" + namespace + "/" + name
	if u, ok := w.uids[key]; ok {
		return u
	}
	u := w.uid()
	w.uids[key] = u
	return u
}

// templateHash is the pod-template-hash the deployment controller computes: FNV-32a of the
// template, its decimal digits mapped onto the name alphabet (rand.SafeEncodeString), which
// gives 9 or 10 characters from {4-9, b, c, d, f}.
func templateHash(template any) string {
	b, _ := json.Marshal(template)
	h := fnv.New32a()
	h.Write(b)
	digits := fmt.Sprint(h.Sum32())
	out := make([]byte, len(digits))
	for i := range len(digits) {
		out[i] = k8sAlphabet[int(digits[i])%len(k8sAlphabet)]
	}
	return string(out)
}

// newWorld lays out the cluster: worker nodes, the shop and the infrastructure workloads.
func newWorld(seed uint64, large bool) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 0x17be_c4a5)), large: large, byName: map[string]*service{},
		uids: map[string]string{}, counts: map[string]map[int64]*minuteCounts{}}
	w.rv = &versions{next: 1_100_000 + int64(w.rng.IntN(400_000)), seen: map[string]versionState{}}
	// A fixed day, shifted by the seed, so tasks differ but stay reproducible.
	w.start = time.Date(2025, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(seed%97) * 7 * time.Hour).
		Add(time.Duration(w.rng.Int64N(int64(time.Hour))))
	w.end = w.start.Add(time.Duration(30+w.rng.IntN(6)) * time.Minute)
	for i := range 3 + w.rng.IntN(2) {
		w.nodes = append(w.nodes,
			node{name: "i-0" + w.hex(16), ip: fmt.Sprintf("10.0.%d.%d", 160+w.rng.IntN(40), 2+w.rng.IntN(250)),
				zone: "us-east-1" + string(rune('a'+i%3))})
	}
	for _, spec := range shop {
		kind := "Deployment"
		if spec.stateful {
			kind = "StatefulSet"
		}
		w.addService(spec, appNamespace, kind, fmt.Sprintf("ghcr.io/open-telemetry/demo:2.1.3-%s", spec.name))
	}
	for _, inf := range infrastructure {
		w.addService(serviceSpec{name: inf.name, replicas: inf.replicas, port: inf.port}, inf.namespace, inf.kind, inf.image)
	}
	return w
}

// infraWorkload is a workload of the cluster's own namespaces.
type infraWorkload struct {
	namespace, name, kind, image string
	replicas, port               int
}

var infrastructure = []infraWorkload{
	{"kube-system", "coredns", "Deployment", "602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/coredns:v1.11.4-eksbuild.2",
		2, 53},
	{"kube-system", "ebs-csi-controller", "Deployment",
		"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/aws-ebs-csi-driver:v1.41.0", 2, 9808},
	{"kube-system", "metrics-server", "Deployment", "registry.k8s.io/metrics-server/metrics-server:v0.7.2", 1, 10250},
	{"kube-system", "aws-node", "DaemonSet",
		"602401143452.dkr.ecr.us-east-1.amazonaws.com/amazon-k8s-cni:v1.19.2-eksbuild.1", 0, 61678},
	{"kube-system", "kube-proxy", "DaemonSet",
		"602401143452.dkr.ecr.us-east-1.amazonaws.com/eks/kube-proxy:v1.32.0-minimal-eksbuild.2", 0, 10249},
	{"kube-system", "topology-monitor", "StatefulSet", "neo4j:5.26.0", 1, 7687},
	{"monitoring", "prometheus-kube-prometheus-operator", "Deployment",
		"quay.io/prometheus-operator/prometheus-operator:v0.79.2", 1, 10250},
	{"monitoring", "prometheus-kube-state-metrics", "Deployment",
		"registry.k8s.io/kube-state-metrics/kube-state-metrics:v2.14.0", 1, 8080},
	{"monitoring", "prometheus-grafana", "Deployment", "docker.io/grafana/grafana:11.4.0", 1, 3000},
	{"monitoring", "prometheus-prometheus-kube-prometheus-prometheus", "StatefulSet",
		"quay.io/prometheus/prometheus:v3.1.0", 1, 9090},
	{"monitoring", "alertmanager-prometheus-kube-prometheus-alertmanager", "StatefulSet",
		"quay.io/prometheus/alertmanager:v0.28.0", 1, 9093},
	{"monitoring", "prometheus-prometheus-node-exporter", "DaemonSet", "quay.io/prometheus/node-exporter:v1.8.2", 0, 9100},
	{"ingress-nginx", "ingress-nginx-controller", "Deployment", "registry.k8s.io/ingress-nginx/controller:v1.12.0", 1, 80},
	{"chaos-mesh", "chaos-controller-manager", "Deployment", "ghcr.io/chaos-mesh/chaos-mesh:v2.7.1", 3, 10080},
	{"chaos-mesh", "chaos-dashboard", "Deployment", "ghcr.io/chaos-mesh/chaos-dashboard:v2.7.1", 1, 2333},
	{"chaos-mesh", "chaos-daemon", "DaemonSet", "ghcr.io/chaos-mesh/chaos-daemon:v2.7.1", 0, 31767},
}

func (w *world) addService(spec serviceSpec, namespace, kind, image string) {
	s := &service{serviceSpec: spec, namespace: namespace, kind: kind, image: image,
		created: w.start.Add(-time.Duration(20+w.rng.IntN(200)) * time.Hour)}
	first := &revision{at: s.created}
	if kind == "Deployment" {
		for range w.rng.IntN(3) {
			s.oldHashes = append(s.oldHashes, templateHash(map[string]any{"old": w.hex(8), "name": s.name}))
		}
	}
	count := spec.replicas
	if kind == "DaemonSet" {
		count = len(w.nodes)
	}
	started := w.start.Add(-time.Duration(1+w.rng.IntN(30)) * time.Hour)
	first.hash = templateHash(w.template(s, first, started))
	for i := range count {
		first.pods = append(first.pods, w.newPod(s, first, i, started.Add(time.Duration(w.rng.IntN(90))*time.Second)))
	}
	s.revisions = []*revision{first}
	w.services = append(w.services, s)
	w.byName[namespace+"/"+spec.name] = s
	if namespace == appNamespace {
		w.byName[spec.name] = s
	}
}

func (w *world) newPod(s *service, r *revision, ordinal int, started time.Time) pod {
	p := pod{node: w.nodes[w.rng.IntN(len(w.nodes))].name, uid: w.uid(), started: started,
		ip: fmt.Sprintf("100.96.%d.%d", w.rng.IntN(8), w.rng.IntN(250)+2)}
	switch s.kind {
	case "StatefulSet":
		p.name = fmt.Sprintf("%s-%d", s.name, ordinal)
	case "DaemonSet":
		p.node = w.nodes[ordinal%len(w.nodes)].name
		p.name = s.name + "-" + w.suffix(5)
	default:
		p.hash = r.hash
		p.name = s.name + "-" + r.hash + "-" + w.suffix(5)
	}
	return p
}

// rollOut gives s a new revision at t with the change described, and its new pods (none
// when the new pods cannot be created).
func (w *world) rollOut(s *service, at time.Time, change string, pods int) *revision {
	r := &revision{at: at, change: change}
	r.hash = templateHash(w.template(s, r, at))
	for i := range pods {
		r.pods = append(r.pods, w.newPod(s, r, i, at.Add(time.Duration(2+w.rng.IntN(4))*time.Second)))
	}
	s.revisions = append(s.revisions, r)
	return r
}

// revisionAt is the revision s runs at t.
func (s *service) revisionAt(t time.Time) *revision {
	cur := s.revisions[0]
	for _, r := range s.revisions[1:] {
		if !t.Before(r.at) {
			cur = r
		}
	}
	return cur
}

// callers lists the shop services that call name directly.
func (w *world) callers(name string) []string {
	var out []string
	for _, s := range w.services {
		if s.namespace == appNamespace && slices.Contains(s.calls, name) {
			out = append(out, s.name)
		}
	}
	return out
}

// upstream lists every service whose requests pass through name (its callers, their
// callers, ...), nearest first, without the load generator.
func (w *world) upstream(name string) []string {
	seen := map[string]bool{name: true}
	var out []string
	queue := []string{name}
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		for _, c := range w.callers(cur) {
			if !seen[c] && c != "load-generator" {
				seen[c] = true
				out = append(out, c)
				queue = append(queue, c)
			}
		}
	}
	return out
}

// upperSnake turns a service name into the style of environment variable names.
func upperSnake(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// pick returns a random element of list.
func pick[T any](w *world, list []T) T { return list[w.rng.IntN(len(list))] }
