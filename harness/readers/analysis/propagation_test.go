package analysis

import (
	"slices"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
)

// TestPropagationMetrics: flagd-config makes cart fail, then frontend; the topology also has
// ad and frontend-proxy. Naming a pod of cart, a pod of frontend-proxy (not frontend, whose
// name it starts with) and ad covers half the chain and detours twice.
func TestPropagationMetrics(t *testing.T) {
	gt, err := grader.ParseGroundTruth([]byte(`groups:
  - {id: flagd, kind: ConfigMap, namespace: shop, name: flagd-config, root_cause: true}
  - {id: cart-svc, kind: Service, namespace: shop, name: cart}
  - {id: frontend-svc, kind: Service, namespace: shop, name: frontend}
  - {id: ad-svc, kind: Service, namespace: shop, name: ad}
propagations:
  - {source: flagd, target: cart-svc, condition: c, effect: e}
  - {source: cart-svc, target: frontend-svc, condition: c, effect: e}
`))
	if err != nil {
		t.Fatal(err)
	}
	topo := &Topology{Services: []string{"ad", "cart", "frontend", "frontend-proxy"},
		Calls: [][2]string{{"frontend", "ad"}, {"frontend", "cart"}, {"frontend-proxy", "frontend"}}}
	k := NewKey(gt, topo)
	named := k.ServicesNamed("grep -c ERROR otel_logs_raw.tsv | grep cart-7f9d-abc\nkubectl describe pod frontend-proxy-5d8f-x2; cat ad; cat CART")
	if !slices.Equal(named, []string{"cart", "frontend-proxy", "ad"}) {
		t.Fatalf("named %v", named)
	}
	p := k.Propagation(named)
	if p.RelativeCovered == nil {
		t.Errorf("propagation %+v: no coverage, want 0.5", p)
	} else if *p.RelativeCovered != 0.5 {
		t.Errorf("propagation covers %v of the chain, want 0.5", *p.RelativeCovered)
	}
	if p.Detoured != 2 {
		t.Errorf("propagation detoured %d times, want 2", p.Detoured)
	}
	if t.Failed() {
		t.FailNow()
	}
	if p := NewKey(gt, nil).Propagation(named); p.RelativeCovered != nil {
		t.Fatalf("without a topology there is no chain of services: %+v", p)
	}
}
