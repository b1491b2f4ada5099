package synth

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// Faults lists the fault kinds Generate can inject.
var Faults = []string{"netpol", "bad-image", "oom", "env", "flag", "quota", "partition", "hpa"}

// FaultDescriptions says what each fault is, for help texts.
var FaultDescriptions = map[string]string{
	"netpol":    "a NetworkPolicy blocks all ingress to a service",
	"bad-image": "a Deployment is updated to an image that does not exist",
	"oom":       "a Deployment's memory limit is cut and its pods are OOM-killed",
	"env":       "a Deployment's environment variable points at a wrong address",
	"flag":      "a feature flag in the flagd-config ConfigMap makes a service fail",
	"quota":     "a memory ResourceQuota leaves no room for a service's new pods",
	"partition": "a chaos-mesh Schedule partitions the network between two services",
	"hpa":       "a HorizontalPodAutoscaler caps a busy service at one replica",
}

// fault is the injected failure: its root-cause objects and who suffers.
type fault struct {
	kind     string
	victim   string   // the service whose requests fail
	affected []string // services upstream of the victim, which return errors too
	caller   string   // partition: the service cut off from the victim
	flag     string   // flag: the feature flag turned on
	envVar   string   // env: the variable changed
	delay    time.Duration
}

// visibleAt is when the fault's effects begin.
func (f *fault) visibleAt(w *world) time.Time { return w.faultAt.Add(f.delay) }

// victims are the services each fault may strike (leaves and mid-tier services whose failure
// shows upstream).
var victims = map[string][]string{
	"netpol":    {"payment", "cart", "product-catalog", "currency", "shipping", "quote", "email", "ad", "recommendation"},
	"bad-image": {"payment", "cart", "product-catalog", "currency", "shipping", "ad", "recommendation", "quote"},
	"oom":       {"cart", "recommendation", "product-catalog", "ad", "checkout", "currency"},
	"env":       {"checkout", "shipping", "recommendation", "cart"},
	"flag":      {"cart", "payment", "ad", "product-catalog", "recommendation"},
	"quota":     {"payment", "cart", "ad", "product-catalog", "currency", "shipping"},
	"partition": {"email", "payment", "currency", "quote", "kafka"},
	"hpa":       {"product-catalog", "currency", "cart", "recommendation"},
}

var featureFlags = map[string]string{
	"cart": "cartFailure", "payment": "paymentFailure", "ad": "adFailure",
	"product-catalog": "productCatalogFailure", "recommendation": "recommendationCacheFailure",
}

// pickFault chooses the victim and the details of a fault of the given kind.
func (w *world) pickFault(kind string) error {
	list, ok := victims[kind]
	if !ok {
		return fmt.Errorf("unknown fault %q; known: %s", kind, strings.Join(Faults, ", "))
	}
	f := &fault{kind: kind, victim: list[w.rng.IntN(len(list))], delay: 30 * time.Second}
	switch kind {
	case "partition":
		callers := w.callers(f.victim)
		sort.Strings(callers)
		f.caller = callers[w.rng.IntN(len(callers))]
	case "flag":
		f.flag = featureFlags[f.victim]
	case "env":
		deps := w.byName[f.victim].calls
		f.envVar = upperSnake(deps[0]) + "_ADDR"
	case "quota":
		f.delay = time.Minute
	case "hpa":
		w.byName[f.victim].replicas = 3
		s := w.byName[f.victim]
		for i := len(s.pods); i < 3; i++ {
			s.pods = append(s.pods, w.newPod(s, i, w.start.Add(-time.Hour)))
		}
	}
	f.affected = w.upstream(f.victim)
	if kind == "partition" {
		// Only the cut-off caller and those above it notice.
		f.affected = append([]string{f.caller}, w.upstream(f.caller)...)
	}
	w.fault = f
	return nil
}

// rootName is the name of the root-cause object.
func (f *fault) rootName() string {
	switch f.kind {
	case "netpol":
		return f.victim + "-deny-ingress"
	case "flag":
		return "flagd-config"
	case "quota":
		return appNamespace + "-memory-quota"
	case "partition":
		return fmt.Sprintf("%s-%s-%s-partition", appNamespace, f.caller, f.victim)
	}
	return f.victim
}

// symptom is how the victim fails, in the words its callers log.
func (f *fault) symptom() string {
	switch f.kind {
	case "netpol", "partition":
		return "i/o timeout"
	case "bad-image", "quota":
		return "connection refused: no endpoints available for service"
	case "oom":
		return "connection reset by peer"
	case "env":
		return "connection refused"
	case "hpa":
		return "context deadline exceeded"
	}
	return "rpc error: code = Internal desc = " + f.flag + " enabled"
}
