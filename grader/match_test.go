package grader

import (
	"testing"
)

// matchID returns the id of the group an entity maps to, or "" when none.
func matchID(gt *GroundTruth, entity string) string {
	i := gt.MatchGroup(ParseEntity(entity))
	if i < 0 {
		return ""
	}
	return gt.Groups[i].ID
}

type matchCase struct{ entity, want string }

func checkMatches(t *testing.T, gt *GroundTruth, cases []matchCase) {
	t.Helper()
	for _, c := range cases {
		if got := matchID(gt, c.entity); got != c.want {
			t.Errorf("%q -> %q, want %q", c.entity, got, c.want)
		}
	}
}

func TestRule1EntityShapes(t *testing.T) {
	for raw, want := range map[string]Entity{
		"otel-demo/Deployment/cart":      {Namespace: "otel-demo", Kind: "Deployment", Name: "cart", Parsed: true, Workload: "cart"},
		"  /otel-demo/Deployment/cart/":  {Namespace: "otel-demo", Kind: "Deployment", Name: "cart", Parsed: true, Workload: "cart"},
		"otel-demo / deploy / cart":      {Namespace: "otel-demo", Kind: "Deployment", Name: "cart", Parsed: true, Workload: "cart"},
		"Node/worker-1":                  {Kind: "Node", Name: "worker-1", Parsed: true, Workload: "worker-1"},
		"cart":                           {Name: "cart"},
		"a/b/c/d":                        {Name: "a/b/c/d"},
		"otel-demo//cart":                {Namespace: "otel-demo", Name: "cart", Workload: "cart"},
		"shop/Pod/cart-5f45f75855-j5sn9": {Namespace: "shop", Kind: "Pod", Name: "cart-5f45f75855-j5sn9", Parsed: true, Workload: "cart"},
		"x/podchaos/kill-1765819200":     {Namespace: "x", Kind: "PodChaos", Name: "kill-1765819200", Parsed: true, Workload: "kill"},
	} {
		got := ParseEntity(raw)
		got.Raw = ""
		if got != want {
			t.Errorf("ParseEntity(%q) = %+v, want %+v", raw, got, want)
		}
	}

	gt := mustParse(t, `
groups:
  - {id: node-1, kind: Node, namespace: ignored, filter: [worker-1], root_cause: true}
  - {id: svc-any, kind: Service, filter: [cart]}
  - {id: svc-ns, kind: Service, namespace: shop, filter: [checkout]}
`)
	checkMatches(t, gt, []matchCase{
		{"Node/worker-1", "node-1"},
		{"cluster/Node/worker-1", "node-1"},
		{"Service/cart", "svc-any"}, // group without namespace
		{"Service/checkout", ""},    // namespace left out: cannot match a namespaced group
		{"shop/Service/checkout", "svc-ns"},
		{"cart", ""}, // unparsed entities match nothing
	})
}

func TestRule2KindSpellings(t *testing.T) {
	for spelling, want := range map[string]string{
		"deploy": "Deployment", "deployments": "Deployment", "DEPLOYMENT": "Deployment",
		"deployments.apps": "Deployment", "po": "Pod", "pods": "Pod", "svc": "Service",
		"services": "Service", "cm": "ConfigMap", "configmaps": "ConfigMap",
		"netpol": "NetworkPolicy", "networkpolicies": "NetworkPolicy",
		"hpa": "HorizontalPodAutoscaler", "horizontalpodautoscalers": "HorizontalPodAutoscaler",
		"ns": "Namespace", "namespaces": "Namespace", "rs": "ReplicaSet", "replicasets": "ReplicaSet",
		"sts": "StatefulSet", "statefulsets": "StatefulSet", "ds": "DaemonSet", "daemonsets": "DaemonSet",
		"no": "Node", "nodes": "Node", "quota": "ResourceQuota", "resourcequotas": "ResourceQuota",
		"networkchaos": "NetworkChaos", "NETWORKCHAOS": "NetworkChaos", "HttpChaos": "HTTPChaos",
		"httpchaos": "HTTPChaos", "jvmchaos": "JVMChaos", "podchaos": "PodChaos",
		"stresschaos": "StressChaos", "schedule": "Schedule", "schedules": "Schedule",
		"networkchaos.chaos-mesh.org": "NetworkChaos", "Widget": "Widget",
	} {
		if got := canonicalKind(spelling); got != want {
			t.Errorf("canonicalKind(%q) = %q, want %q", spelling, got, want)
		}
	}
	gt := mustParse(t, `
groups:
  - {id: np, kind: NetworkPolicy, namespace: shop, filter: [deny-all], root_cause: true}
  - {id: w, kind: widget, namespace: shop, filter: [w1]}
  - {id: hc, kind: HttpChaos, namespace: chaos-mesh, filter: [abort]}
`)
	checkMatches(t, gt, []matchCase{
		{"shop/netpol/deny-all", "np"},
		{"shop/networkpolicies/deny-all", "np"},
		{"shop/Widget/w1", "w"}, // unknown kinds compare case-insensitively
		{"chaos-mesh/HTTPChaos/abort", "hc"},
		{"shop/ConfigMap/deny-all", ""},
	})
}

func TestRule3WorkloadEquivalence(t *testing.T) {
	for _, c := range []struct{ kind, name, want string }{
		{"Pod", "checkout-8546fdc74d-d68cn", "checkout"},
		{"Pod", "frontend-proxy-7c9b8d6f5d-x2kq4", "frontend-proxy"},
		{"Pod", "kafka-0", "kafka"},
		{"Pod", "node-exporter-x7k2p", "node-exporter"},
		{"Pod", "cart", "cart"},
		{"Pod", "load-generator", "load-generator"},
		// Strict: only suffixes Kubernetes can generate are dropped. A real one reduces, one
		// with letters Kubernetes never generates does not, and neither do real words that
		// look like suffixes (`proxy`, `collector`, `agent` hold vowels).
		{"Pod", "checkout-7f9c8d6b5-x2k4p", "checkout"},
		{"Pod", "checkout-7f9c8d6b5-abcde", "checkout-7f9c8d6b5-abcde"},
		{"Pod", "checkout-abcdefgh-x2k4p", "checkout-abcdefgh"}, // no hash: only the pod suffix goes
		{"Pod", "frontend-proxy", "frontend-proxy"},
		{"Pod", "otel-collector-agent", "otel-collector-agent"},
		{"ReplicaSet", "image-provider", "image-provider"},
		{"ReplicaSet", "checkout-8546fdc74d", "checkout"},
		{"ReplicaSet", "checkout", "checkout"},
		{"Deployment", "checkout-8546fdc74d", "checkout-8546fdc74d"},
	} {
		if got := workloadName(c.kind, c.name); got != c.want {
			t.Errorf("workloadName(%s, %s) = %q, want %q", c.kind, c.name, got, c.want)
		}
	}
	gt := mustParse(t, `
groups:
  - {id: checkout-deployment-1, kind: Deployment, namespace: shop, filter: [checkout\b], root_cause: true}
  - {id: cart-pod-1, kind: Pod, namespace: shop, filter: [cart-.*]}
  - {id: kafka-sts-1, kind: StatefulSet, namespace: shop, filter: [kafka]}
  - {id: cart-service-1, kind: Service, namespace: shop, filter: [cart\b]}
`)
	checkMatches(t, gt, []matchCase{
		{"shop/Pod/checkout-8546fdc74d-d68cn", "checkout-deployment-1"},
		{"shop/ReplicaSet/checkout-8546fdc74d", "checkout-deployment-1"},
		{"shop/StatefulSet/checkout", "checkout-deployment-1"},
		{"shop/DaemonSet/checkout", "checkout-deployment-1"},
		{"shop/Deployment/cart", "cart-pod-1"},           // bare prefix of cart-.*
		{"shop/Pod/cart-5f45f75855-j5sn9", "cart-pod-1"}, // full name
		{"shop/Pod/kafka-0", "kafka-sts-1"},
		{"shop/Service/checkout", ""},                // a Service is not a workload
		{"shop/Pod/checkout-8546fdc74d-d68cn-x", ""}, // not a generated name
		{"shop/Pod/checkout-7f9c8d6b5-x2k4p", "checkout-deployment-1"},
		{"shop/Pod/checkout-7f9c8d6b5-abcde", ""},   // a suffix Kubernetes cannot generate
		{"other/Pod/checkout-8546fdc74d-d68cn", ""}, // namespace must correspond
	})
}

func TestRule4ScheduleMatchesChaos(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: partition, kind: NetworkChaos, namespace: chaos-mesh, filter: [.*email-partition], root_cause: true}
  - {id: stress-schedule, kind: Schedule, namespace: chaos-mesh, filter: [shop-cpu-stress]}
  - {id: memory-stress, kind: StressChaos, namespace: chaos-mesh, filter: [shop-memory-stress]}
`)
	checkMatches(t, gt, []matchCase{
		{"chaos-mesh/Schedule/shop-email-partition", "partition"},
		{"chaos-mesh/NetworkChaos/shop-email-partition", "partition"},
		{"chaos-mesh/StressChaos/shop-cpu-stress-1765819200", "stress-schedule"}, // spawned object
		{"chaos-mesh/StressChaos/shop-cpu-stress", "stress-schedule"},
		{"chaos-mesh/StressChaos/shop-memory-stress-1765819200", "memory-stress"}, // spawned, same kind
		{"chaos-mesh/Schedule/shop-memory-stress", "memory-stress"},
		{"chaos-mesh/PodChaos/shop-memory-stress-1765819200", ""},
		{"chaos-mesh/Pod/shop-cpu-stress", ""},
		{"chaos-mesh/ConfigMap/shop-email-partition", ""},
	})
}

func TestRule5Namespaces(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: ns-1, kind: Namespace, namespace: otel-demo, name: otel-demo, root_cause: true}
  - {id: cm-1, kind: ConfigMap, namespace: Otel-Demo, name: flagd-config}
`)
	checkMatches(t, gt, []matchCase{
		{"otel-demo/Namespace/otel-demo", "ns-1"},
		{"cluster/Namespace/otel-demo", "ns-1"},
		{"Namespace/otel-demo", "ns-1"},
		{"Namespace/other", ""},
		{"OTEL-DEMO/ConfigMap/flagd-config", "cm-1"},
		{"kube-system/ConfigMap/flagd-config", ""},
	})
}

func TestRule6Names(t *testing.T) {
	for _, c := range []struct {
		filter, name string
		want         bool
	}{
		{`checkout\b`, "checkout", true},
		{`checkout\b`, "checkout-x", false},     // whole name
		{`ad-.*`, "load-generator-7f9c", false}, // not a substring search
		{`checkout-.*`, "checkout", true},       // bare prefix
		{`checkout-.+`, "checkout", true},       // bare prefix
		{`checkout-.+`, "checkout-", false},
		{`.*adservice`, "ad", false}, // Scenario-29's filter
		{`.*adservice`, "jvm-return-adservice", true},
		{`.*recommendation`, "otel-demo-recommendation-cpu-stress", true}, // leading .*: contains
		{`.*recommendation`, "recommendation", true},
		{`.*recommendation`, "otel-demo-ad-cpu-stress", false},
		{`ad-.*`, "load-generator", false}, // no leading .*: still the whole name
		{`*.*`, "anything", true},          // glob fallback
		{`*`, "anything", true},
		{`cart-[`, "cart-[", false}, // broken glob: matches nothing
		{`*-config`, "flagd-config", true},
		{`*-config`, "flagd", false},
		{`Frontend`, "frontend", true}, // case-insensitive
	} {
		if got := compileFilter(c.filter).Matches(c.name); got != c.want {
			t.Errorf("filter %q on %q = %v, want %v", c.filter, c.name, got, c.want)
		}
	}
	gt := mustParse(t, `
groups:
  - {id: cm-1, kind: ConfigMap, namespace: otel-demo, name: flagd-config, root_cause: true}
`)
	checkMatches(t, gt, []matchCase{
		{"otel-demo/ConfigMap/flagd-config", "cm-1"},
		{"otel-demo/ConfigMap/flagd-config-v2", ""}, // a name needs the exact name
		{"otel-demo/ConfigMap/flagd", ""},
	})
}

func TestRule7Preference(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: frontend-pod-1, kind: Pod, namespace: otel-demo, filter: [frontend-.*]}
  - {id: frontend-proxy-pod-1, kind: Pod, namespace: otel-demo, filter: [frontend-proxy-.*]}
  - {id: first-hpa, kind: HorizontalPodAutoscaler, namespace: otel-demo, filter: ["*.*"]}
  - {id: accounting-horizontal-pod-autoscaler-1, kind: HorizontalPodAutoscaler, namespace: otel-demo, filter: ["*.*"], root_cause: true}
  - {id: ad-horizontal-pod-autoscaler-1, kind: HorizontalPodAutoscaler, namespace: otel-demo, filter: ["*.*"], root_cause: true}
`)
	checkMatches(t, gt, []matchCase{
		// Both pod groups match; the id holding the whole workload name wins.
		{"otel-demo/Pod/frontend-proxy-7c9b8d6f5d-x2kq4", "frontend-proxy-pod-1"},
		{"otel-demo/Pod/frontend-7c9b8d6f5d-x2kq4", "frontend-pod-1"},
		// Root-cause groups first, then the id holding the name.
		{"otel-demo/HorizontalPodAutoscaler/ad", "ad-horizontal-pod-autoscaler-1"},
		{"otel-demo/HorizontalPodAutoscaler/accounting", "accounting-horizontal-pod-autoscaler-1"},
		{"otel-demo/hpa/ad-hpa", "ad-horizontal-pod-autoscaler-1"}, // leading word "ad"
		// No word in common: file order among root-cause groups.
		{"otel-demo/HorizontalPodAutoscaler/cart", "accounting-horizontal-pod-autoscaler-1"},
	})
	if got := idWordAffinity("frontend-proxy-pod-1", "frontend-proxy"); got != 2 {
		t.Errorf("affinity = %d, want 2", got)
	}
	if got := idWordAffinity("load-generator-pod-1", "ad"); got != 0 {
		t.Errorf("`ad` must not be found inside `load`: affinity %d", got)
	}
}
