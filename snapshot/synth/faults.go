package synth

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Faults lists the fault kinds Generate can inject. Two kinds joined by "+" (flag+netpol)
// inject two independent faults on different services.
var Faults = []string{"flag", "network-chaos", "stress-chaos", "jvm-chaos", "pod-chaos", "http-chaos", "schedule",
	"bad-image", "oom", "env", "pod-pending", "quota", "hpa", "netpol"}

// FaultDescriptions says what each fault is, for help texts, and names its root-cause kind.
var FaultDescriptions = map[string]string{
	"flag":          "a flag of the flagd-config ConfigMap is switched on (ConfigMap)",
	"network-chaos": "a chaos-mesh NetworkChaos delays, drops or partitions a service's traffic (NetworkChaos)",
	"stress-chaos":  "a chaos-mesh StressChaos burns CPU or memory in a service's pods (StressChaos)",
	"jvm-chaos":     "a chaos-mesh JVMChaos adds latency, exceptions or GC to a Java service (JVMChaos)",
	"pod-chaos":     "a chaos-mesh PodChaos makes a service's pods fail (PodChaos)",
	"http-chaos":    "a chaos-mesh HTTPChaos aborts or delays a service's HTTP requests (HTTPChaos)",
	"schedule":      "a chaos-mesh Schedule spawns one of the chaos experiments above (Schedule)",
	"bad-image":     "a Deployment is updated to an image tag that does not exist (Deployment)",
	"oom":           "a Deployment's memory limit is cut and its pods are OOM-killed (Deployment)",
	"env":           "a Deployment's environment variable points at a wrong address (Deployment)",
	"pod-pending":   "a service's pods ask for a node that does not exist and stay Pending (Pod)",
	"quota":         "a ResourceQuota on the namespace leaves no room for a service's new pods (Namespace)",
	"hpa":           "a HorizontalPodAutoscaler caps a busy service at one replica (HorizontalPodAutoscaler)",
	"netpol":        "a NetworkPolicy blocks all ingress to a service (NetworkPolicy)",
}

// mix weighs the kinds a seed picks when none is asked for, as the 39 public ground truths'
// root causes are spread: ConfigMap 12, chaos-mesh 16, Deployment 5, Pod 4, Namespace 2,
// HorizontalPodAutoscaler 1, NetworkPolicy 1.
var mix = []struct {
	kind   string
	weight int
}{
	{"flag", 12}, {"network-chaos", 6}, {"stress-chaos", 2}, {"jvm-chaos", 2}, {"schedule", 2}, {"pod-chaos", 2},
	{"http-chaos",
		2}, {"bad-image", 2}, {"oom", 1}, {"env", 2}, {"pod-pending", 4}, {"quota", 2}, {"hpa", 1}, {"netpol", 1},
}

// KindForSeed is the fault kind a seed picks from the real mix.
func KindForSeed(seed uint64) string {
	total := 0
	for _, m := range mix {
		total += m.weight
	}
	n := int((seed * 2654435761) % uint64(total))
	for _, m := range mix {
		if n < m.weight {
			return m.kind
		}
		n -= m.weight
	}
	return mix[0].kind
}

// mode is how a fault hurts calls to a service.
type mode int

const (
	modeFail    mode = iota // the service answers some calls with an error of its own
	modeDown                // no ready pod: calls are refused
	modeCut                 // calls from some callers never arrive and time out
	modeSlow                // calls take longer
	modeRefused             // calls from some callers go to a wrong address and are refused
)

// effect is what a fault does to calls to one service from a time on.
type effect struct {
	service string
	mode    mode
	from    time.Time
	until   time.Time     // zero: to the end
	rate    float64       // share of calls hurt (fail, slow)
	delay   time.Duration // slow: added latency
	message string        // fail: the error the service writes
	callers []string      // cut, refused: only calls from these (nil: all)
}

// trouble is the state a fault leaves a service's pods in.
type trouble struct {
	service  string
	from     time.Time
	reason   string // ImagePullBackOff, CrashLoopBackOff, Pending, NotReady
	revision *revision
	cpu      float64 // cores burnt (stress), 0 for none
	memory   float64 // bytes held (stress, leaks), 0 for none
}

// gtGroup is one group of a ground truth.
type gtGroup struct {
	id, kind, namespace, name string
	filter                    []string
	root                      bool
}

// fault is one injected failure: its root cause, what it does and the evidence it leaves.
type fault struct {
	kind, victim string
	at           time.Time
	rootKind     string
	rootNS       string
	rootName     string
	groups       []gtGroup // root first, then objects that denote the same entity
	effects      []effect
	troubles     []trouble
	objects      []addedObject
	events       []event
	changed      string // the ground truth's fault.changed text, if any
	condition    string
	mechanism    string
	actions      []string
	flag         *flagSpec
}

// addedObject is an object a fault adds to the cluster for a while.
type addedObject struct {
	name        string    // for decoys: to keep them apart
	from, until time.Time // until zero: to the end
	build       func(t time.Time) obj
}

// rootEntity is the root cause as an agent names it.
func (f *fault) rootEntity() string {
	if f.rootNS == "" {
		return f.rootKind + "/" + f.rootName // cluster-scoped
	}
	return f.rootNS + "/" + f.rootKind + "/" + f.rootName
}

// victims are the services each fault may strike.
var victims = map[string][]string{
	"network-chaos": {"payment", "cart", "product-catalog", "currency", "shipping", "quote", "email", "ad",
		"recommendation", "checkout", "frontend"},
	"stress-chaos": {"recommendation", "valkey-cart", "product-catalog", "ad", "currency", "checkout", "cart"},
	"jvm-chaos":    {"ad", "fraud-detection"},
	"pod-chaos":    {"checkout", "cart", "currency", "product-catalog", "shipping", "payment", "recommendation", "quote"},
	"http-chaos":   {"email", "quote"},
	"bad-image":    {"payment", "cart", "product-catalog", "currency", "shipping", "ad", "recommendation", "quote"},
	"oom":          {"cart", "recommendation", "product-catalog", "ad", "checkout", "currency"},
	"env":          {"checkout", "shipping", "recommendation", "cart", "frontend"},
	"pod-pending": {"ad", "cart", "currency", "email", "payment", "quote", "shipping", "product-catalog",
		"load-generator"},
	"quota": {"ad", "cart", "payment", "product-catalog", "currency", "shipping", "email"},
	"hpa":   {"product-catalog", "currency", "cart", "recommendation", "frontend"},
	"netpol": {"payment", "cart", "product-catalog", "currency", "shipping", "quote", "email", "ad", "recommendation",
		"frontend"},
}

// ParseFault splits a fault spec (one kind, or two joined by "+") and checks its kinds.
func ParseFault(spec string) ([]string, error) {
	kinds := strings.Split(spec, "+")
	if len(kinds) > 2 {
		return nil, fmt.Errorf("at most two faults at once, not %q", spec)
	}
	for _, k := range kinds {
		if _, ok := FaultDescriptions[k]; !ok {
			return nil, fmt.Errorf("unknown fault %q; known: %s", k, strings.Join(Faults, ", "))
		}
	}
	if len(kinds) == 2 && kinds[0] == kinds[1] && kinds[0] == "quota" {
		return nil, fmt.Errorf("quota cannot be injected twice")
	}
	return kinds, nil
}

// inject picks a victim and the details of a fault of kind and lays out its timeline.
func (w *world) inject(kind string, taken []string) *fault {
	f := &fault{kind: kind}
	// Most faults start inside the window; some were already there at the first dump.
	f.at = w.start.Add(time.Duration(4*60+w.rng.IntN(9*60)) * time.Second)
	if len(w.faults) > 0 {
		f.at = w.faults[0].at.Add(time.Duration(3+w.rng.IntN(6)) * time.Minute)
	} else if w.rng.IntN(5) == 0 {
		f.at = w.start.Add(-time.Duration(3+w.rng.IntN(40)) * time.Minute)
	}
	free := func(list []string) string {
		var ok []string
		for _, s := range list {
			if !slices.Contains(taken, s) {
				ok = append(ok, s)
			}
		}
		if len(ok) == 0 {
			ok = list
		}
		return pick(w, ok)
	}
	switch kind {
	case "flag":
		var names []string
		for _, fl := range flags {
			if !slices.Contains(taken, fl.victim) {
				names = append(names, fl.name)
			}
		}
		sort.Strings(names)
		w.injectFlag(f, flagByName(pick(w, names)))
	case "network-chaos", "stress-chaos", "jvm-chaos", "pod-chaos", "http-chaos":
		f.victim = free(victims[kind])
		w.injectChaos(f, kind, false)
	case "schedule":
		k := pick(w, []string{"network-chaos", "stress-chaos", "http-chaos", "pod-chaos"})
		f.victim = free(victims[k])
		w.injectChaos(f, k, true)
	default:
		f.victim = free(victims[kind])
		w.injectWorkload(f)
	}
	return f
}

// rate is a share of calls between lo and hi.
func (w *world) rate(lo, hi float64) float64 { return lo + w.rng.Float64()*(hi-lo) }

// podsOf lists the pods s runs at t.
func podsOf(s *service, t time.Time) []pod { return s.revisionAt(t).pods }
