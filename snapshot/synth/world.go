// Package synth generates complete benchmark tasks in exactly the real snapshot formats: a
// simulated microservice shop on Kubernetes, one injected fault, coherent evidence across
// alerts, events, object dumps, logs, traces and metrics, and a ground truth in the real
// schema. Generation is deterministic for a seed.
package synth

import (
	"fmt"
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

// serviceSpec describes one service of the shop: what it calls, its language and how many
// replicas it runs.
type serviceSpec struct {
	name     string
	calls    []string
	lang     string
	replicas int
	stateful bool // a StatefulSet (kafka) rather than a Deployment
	port     int
}

// shop is the simulated application: 19 services, modelled on the OpenTelemetry demo.
var shop = []serviceSpec{
	{name: "load-generator", calls: []string{"frontend-proxy"}, lang: "python", replicas: 1, port: 8089},
	{name: "frontend-proxy", calls: []string{"frontend", "image-provider", "flagd"}, lang: "cpp", replicas: 1, port: 8080},
	{name: "frontend", calls: []string{"ad", "cart", "checkout", "currency", "product-catalog", "recommendation", "shipping"}, lang: "nodejs", replicas: 1, port: 8080},
	{name: "image-provider", lang: "cpp", replicas: 1, port: 8081},
	{name: "ad", calls: []string{"flagd"}, lang: "java", replicas: 1, port: 9555},
	{name: "cart", calls: []string{"valkey-cart", "flagd"}, lang: "dotnet", replicas: 1, port: 7070},
	{name: "valkey-cart", lang: "c", replicas: 1, port: 6379},
	{name: "checkout", calls: []string{"cart", "currency", "email", "payment", "product-catalog", "shipping", "kafka"}, lang: "go", replicas: 1, port: 5050},
	{name: "currency", lang: "cpp", replicas: 1, port: 7001},
	{name: "email", lang: "ruby", replicas: 1, port: 6060},
	{name: "payment", calls: []string{"flagd"}, lang: "nodejs", replicas: 1, port: 50051},
	{name: "product-catalog", calls: []string{"flagd"}, lang: "go", replicas: 1, port: 3550},
	{name: "recommendation", calls: []string{"product-catalog", "flagd"}, lang: "python", replicas: 1, port: 9001},
	{name: "shipping", calls: []string{"quote"}, lang: "rust", replicas: 1, port: 50050},
	{name: "quote", lang: "php", replicas: 1, port: 8090},
	{name: "kafka", lang: "java", replicas: 1, stateful: true, port: 9092},
	{name: "accounting", calls: []string{"kafka"}, lang: "dotnet", replicas: 1, port: 8080},
	{name: "fraud-detection", calls: []string{"kafka"}, lang: "java", replicas: 1, port: 8080},
	{name: "flagd", lang: "go", replicas: 1, port: 8013},
}

// pod is one running pod of a service.
type pod struct {
	name       string
	replicaSet string // "" for StatefulSet pods
	node       string
	uid        string
	ip         string
	started    time.Time
}

// service is a service of the shop as deployed in the simulated cluster.
type service struct {
	serviceSpec
	rsHash string // pod-template-hash of the current ReplicaSet
	pods   []pod
	image  string
}

// world is the whole simulated cluster and its timeline.
type world struct {
	rng      *rand.Rand
	start    time.Time // first record
	faultAt  time.Time // when the fault is injected
	end      time.Time // last record
	nodes    []string
	services []*service
	byName   map[string]*service
	fault    *fault
	rollout  replacement       // the victim's new ReplicaSet, for faults that roll it out
	uids     map[string]string // one uid per object across dumps
	large    bool
}

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

func (w *world) uid() string {
	return w.hex(8) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(4) + "-" + w.hex(12)
}

// newWorld lays out the cluster: three worker nodes and every service with its pods.
func newWorld(seed uint64, large bool) *world {
	w := &world{rng: rand.New(rand.NewPCG(seed, 0x17be_c4a5)), large: large, byName: map[string]*service{}, uids: map[string]string{}}
	// A fixed day, shifted by the seed, so tasks differ but stay reproducible.
	w.start = time.Date(2025, 12, 1, 9, 0, 0, 0, time.UTC).Add(time.Duration(seed%97) * 7 * time.Hour).Add(time.Duration(w.rng.IntN(3600)) * time.Second)
	w.faultAt = w.start.Add(10 * time.Minute)
	w.end = w.start.Add(30 * time.Minute)
	for range 3 {
		w.nodes = append(w.nodes, "ip-10-0-"+fmt.Sprint(w.rng.IntN(200)+10)+"-"+fmt.Sprint(w.rng.IntN(250)+2)+".ec2.internal")
	}
	for _, spec := range shop {
		s := &service{serviceSpec: spec, image: fmt.Sprintf("ghcr.io/open-telemetry/demo:2.1.3-%s", spec.name)}
		if !spec.stateful {
			s.rsHash = w.suffix(10)
		}
		for i := range spec.replicas {
			s.pods = append(s.pods, w.newPod(s, i, w.start.Add(-time.Duration(2+w.rng.IntN(20))*time.Hour)))
		}
		w.services = append(w.services, s)
		w.byName[s.name] = s
	}
	return w
}

func (w *world) newPod(s *service, ordinal int, started time.Time) pod {
	p := pod{node: w.nodes[w.rng.IntN(len(w.nodes))], uid: w.uid(), started: started,
		ip: fmt.Sprintf("100.96.%d.%d", w.rng.IntN(8), w.rng.IntN(250)+2)}
	if s.stateful {
		p.name = fmt.Sprintf("%s-%d", s.name, ordinal)
	} else {
		p.replicaSet = s.name + "-" + s.rsHash
		p.name = p.replicaSet + "-" + w.suffix(5)
	}
	return p
}

// callers lists the services that call s, directly.
func (w *world) callers(name string) []string {
	var out []string
	for _, s := range w.services {
		if slices.Contains(s.calls, name) {
			out = append(out, s.name)
		}
	}
	return out
}

// upstream lists every service whose requests pass through name (its callers, their
// callers, ...), nearest first.
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

// degraded reports whether a service returns errors at t: the victim and everything upstream.
func (w *world) degraded(name string, t time.Time) bool {
	if t.Before(w.fault.visibleAt(w)) {
		return false
	}
	return name == w.fault.victim || slices.Contains(w.fault.affected, name)
}

// upperSnake turns a service name into the style of environment variable names.
func upperSnake(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
