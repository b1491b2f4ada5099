package grader

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
)

const shopGT = `
groups:
  - {id: flags, kind: ConfigMap, namespace: shop, name: flagd-config, root_cause: true}
  - {id: cart-service-1, kind: Service, namespace: shop, filter: [cart\b]}
  - {id: cart-pod-1, kind: Pod, namespace: shop, filter: [cart-.*]}
  - {id: quota-1, kind: ResourceQuota, namespace: shop, filter: [mem-quota], root_cause: true}
aliases: [[cart-service-1, cart-pod-1]]
`

func TestScoreRecallGatedPrecision(t *testing.T) {
	gt := mustParse(t, shopGT)
	for name, c := range map[string]struct {
		names          []string
		score          float64
		tp, fp, found  int
		predictionsLen int
	}{
		"all root causes, nothing else":  {[]string{"shop/ConfigMap/flagd-config", "shop/ResourceQuota/mem-quota"}, 1, 2, 0, 2, 2},
		"all root causes plus a symptom": {[]string{"shop/cm/flagd-config", "shop/quota/mem-quota", "shop/Service/cart", "shop/Pod/cart-5f45f75855-j5sn9"}, 0.5, 2, 2, 2, 4},
		"one root cause missed":          {[]string{"shop/ConfigMap/flagd-config"}, 0, 1, 0, 1, 1},
		"nothing submitted":              {nil, 0, 0, 0, 0, 0},
		"blank names ignored":            {[]string{"", "  ", "shop/ConfigMap/flagd-config", "shop/ResourceQuota/mem-quota"}, 1, 2, 0, 2, 2},
		"identical entities count once":  {[]string{"shop/ConfigMap/flagd-config", " /shop/configmaps/FLAGD-CONFIG ", "shop/ResourceQuota/mem-quota", "junk", "JUNK"}, 2.0 / 3, 2, 1, 2, 3},
	} {
		t.Run(name, func(t *testing.T) {
			s := gt.Score(c.names)
			if got, want := counts(s), fmt.Sprintf("score %v, %d tp, %d fp, %d found, 0 dropped", c.score, c.tp, c.fp, c.found); got != want {
				t.Errorf("%s, want %s", got, want)
			}
			if s.RootCauses != 2 {
				t.Errorf("%d root causes, want 2", s.RootCauses)
			}
			if len(s.Predictions) != c.predictionsLen {
				t.Errorf("%d predictions, want %d", len(s.Predictions), c.predictionsLen)
			}
		})
	}
}

func TestPredictionsNameTheirGroup(t *testing.T) {
	gt := mustParse(t, shopGT)
	s := gt.Score([]string{"shop/Pod/cart-5f45f75855-j5sn9", "shop/ConfigMap/flagd-config", "nowhere/Pod/x"})
	want := []struct {
		group string
		root  bool
	}{{"cart-pod-1", false}, {"flags", true}, {"", false}}
	for i, w := range want {
		p := s.Predictions[i]
		got := ""
		if p.Group != nil {
			got = *p.Group
		}
		if got != w.group || p.RootCause != w.root {
			t.Errorf("prediction %d = %+v (group %q), want group %q root %v", i, p, got, w.group, w.root)
		}
	}
}

// realGroundTruth reads one of IBM's public ground truths.
func realGroundTruth(t *testing.T, scenario string) *GroundTruth {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(shareddata.Dir(t), "ground-truth", "itbench-github", "scenario_"+scenario+".yaml"))
	if err != nil {
		t.Fatal(err)
	}
	gt, err := ParseGroundTruth(doc)
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

// TestRealQuirks pins how the real ground truths' oddities grade.
func TestRealQuirks(t *testing.T) {
	checkRealScores(t, []realScore{
		// Scenario-1's alias list merges the root cause (load-generator pod) with downstream
		// services, so naming the frontend-proxy Service hits the root-cause set.
		{"1", []string{"otel-demo/Pod/load-generator-6b8f9c5d7-abcde"}, 1},
		{"1", []string{"otel-demo/Deployment/load-generator"}, 1},
		{"1", []string{"otel-demo/Service/frontend-proxy"}, 1},
		{"1", []string{"otel-demo/Service/accounting"}, 0},
		// Scenario-29's root cause is a JVMChaos whose filter `.*adservice` does not match the
		// Deployment `ad`: naming the Deployment finds no root cause.
		{"29", []string{"otel-demo/Deployment/ad"}, 0},
		{"29", []string{"chaos-mesh/JVMChaos/jvm-return-adservice"}, 1},
		{"29", []string{"chaos-mesh/Schedule/jvm-return-adservice", "otel-demo/Deployment/ad"}, 0.5},
		// Scenario-38 has two `*.*` HPA root causes told apart by name; both are needed.
		{"38", []string{"otel-demo/HorizontalPodAutoscaler/accounting", "otel-demo/HorizontalPodAutoscaler/ad"}, 1},
		{"38", []string{"otel-demo/HorizontalPodAutoscaler/accounting"}, 0},
		{"38", []string{"otel-demo/hpa/ad", "otel-demo/hpa/accounting", "otel-demo/Namespace/otel-demo"}, 2.0 / 3},
		// Scenario-102's root cause is the Namespace group with a null namespace.
		{"102", []string{"cluster/Namespace/otel-demo"}, 1},
		{"102", []string{"Namespace/otel-demo", "otel-demo/Deployment/ad"}, 0.5},
		{"102", []string{"otel-demo/ResourceQuota/otel-demo-quota"}, 0},
		// Name-only root causes: ConfigMap flagd-config (Scenario-2) and Namespace otel-demo (37).
		{"2", []string{"otel-demo/ConfigMap/flagd-config"}, 1},
		{"2", []string{"otel-demo/ConfigMap/flagd"}, 0},
		{"37", []string{"otel-demo/Namespace/otel-demo"}, 1},
	})
}

// realScore is the score a submission should get on one of IBM's public ground truths.
type realScore struct {
	scenario string
	names    []string
	score    float64
}

// checkRealScores scores each submission against its scenario's real ground truth.
func checkRealScores(t *testing.T, cases []realScore) {
	t.Helper()
	for _, c := range cases {
		gt := realGroundTruth(t, c.scenario)
		if s := gt.Score(c.names); s.Score != c.score {
			t.Errorf("Scenario-%s %v: score %v, want %v (%+v)", c.scenario, c.names, s.Score, c.score, s)
		}
	}
}

// TestRealLeadingWildcardFilters: a filter starting with `.*` reads as "contains" (rule 6), so
// the real chaos root causes filtered that way can be named. Scenario-25's root cause is a
// Schedule filtered `.*recommendation` whose experiment is recommendation-cpu-stress;
// Scenario-17's a NetworkChaos filtered `.*product-catalog`.
func TestRealLeadingWildcardFilters(t *testing.T) {
	checkRealScores(t, []realScore{
		{"25", []string{"chaos-mesh/Schedule/otel-demo-recommendation-cpu-stress"}, 1},
		{"25", []string{"chaos-mesh/Schedule/recommendation-cpu-stress"}, 1},
		{"25", []string{"chaos-mesh/StressChaos/otel-demo-recommendation-cpu-stress"}, 1},
		{"25", []string{"otel-demo/Deployment/recommendation"}, 0},                    // the kind still gates
		{"25", []string{"otel-demo/Schedule/otel-demo-recommendation-cpu-stress"}, 0}, // and the namespace
		{"17", []string{"chaos-mesh/NetworkChaos/otel-demo-product-catalog-network-delay"}, 1},
		{"17", []string{"chaos-mesh/NetworkChaos/otel-demo-product-catalog-network-delay", "otel-demo/Service/product-catalog"}, 0.5},
		{"17", []string{"chaos-mesh/NetworkChaos/otel-demo-checkout-network-delay"}, 0},
	})
}

// TestRealSpawnedChaosNames: the object a Schedule spawned (`<schedule>-<unix time>`) loses its
// timestamp for every chaos kind (rule 4), not only when a Schedule group is matched, so it
// scores on Scenario-21 and 26 as it does on 19 (whose root cause is aliased with a Schedule).
func TestRealSpawnedChaosNames(t *testing.T) {
	checkRealScores(t, []realScore{
		{"21", []string{"chaos-mesh/StressChaos/otel-demo-valkey-memory-stress-1766012345"}, 1},
		{"26", []string{"chaos-mesh/HTTPChaos/otel-demo-email-http-chaos-post-body-tamper-1766012345"}, 1},
		{"19", []string{"chaos-mesh/NetworkChaos/otel-demo-email-checkout-network-partition-1766012345"}, 1},
		{"25", []string{"chaos-mesh/StressChaos/otel-demo-recommendation-cpu-stress-1766012345"}, 1},
		{"21", []string{"chaos-mesh/PodChaos/otel-demo-valkey-memory-stress-1766012345"}, 0},   // another chaos kind
		{"21", []string{"otel-demo/StressChaos/otel-demo-valkey-memory-stress-1766012345"}, 0}, // another namespace
	})
}

// TestRealIBMOutput grades the real diagnosis of IBM's reference agent for Scenario-2: the
// flagd-config ConfigMap (the root cause) and the flagd Deployment are flagged, the other four
// entities are not, so the score is 1/2.
func TestRealIBMOutput(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join(shareddata.Dir(t), "agent-outputs", "ibm-sre-agent-Scenario-2.json"))
	if err != nil {
		t.Fatal(err)
	}
	sub, err := ReadSubmission(doc)
	if err != nil {
		t.Fatal(err)
	}
	if sub.Format != "entities" || len(sub.Names) != 2 {
		t.Fatalf("submission = %+v, want the 2 flagged entities", sub)
	}
	s := realGroundTruth(t, "2").Score(sub.Names)
	if got, want := counts(s), "score 0.5, 1 tp, 1 fp, 1 found, 0 dropped"; got != want {
		t.Fatalf("%s, want %s", got, want)
	}
}

// counts is a score without its predictions, to compare and for messages.
func counts(s EpisodeScore) string {
	return fmt.Sprintf("score %v, %d tp, %d fp, %d found, %d dropped", s.Score, s.TP, s.FP, s.RootCausesFound, s.EntitiesDropped)
}

// manyEntities names n distinct entities that match no group, after the given ones.
func manyEntities(first []string, n int) []string {
	names := append([]string(nil), first...)
	for i := range n {
		names = append(names, fmt.Sprintf("shop/Pod/noise-%d", i))
	}
	return names
}

// TestEntitiesPastTheBound: of a submission naming more than MaxEntities distinct entities,
// the first MaxEntities are graded as predictions, and the rest are counted, reported and
// scored as false positives without being matched; duplicates and blanks are not counted.
func TestEntitiesPastTheBound(t *testing.T) {
	gt := mustParse(t, shopGT)
	roots := []string{"shop/ConfigMap/flagd-config", "shop/ResourceQuota/mem-quota"}
	names := manyEntities(roots, MaxEntities+998)
	names = append(names, "", names[5], "shop/ConfigMap/flagd-config") // a blank, a duplicate past the bound, one before it
	s := gt.Score(names)
	if len(s.Predictions) != MaxEntities || s.EntitiesDropped != 1000 {
		t.Fatalf("%d predictions, %d dropped; want %d and 1000", len(s.Predictions), s.EntitiesDropped, MaxEntities)
	}
	if got, want := counts(s), fmt.Sprintf("score %v, 2 tp, %d fp, 2 found, 1000 dropped", 2.0/float64(MaxEntities+1000), MaxEntities+998); got != want {
		t.Fatalf("%s, want %s", got, want)
	}
	got, dropped := DistinctEntities(names)
	if len(got) != MaxEntities {
		t.Fatalf("DistinctEntities gives %d names, want %d", len(got), MaxEntities)
	}
	if got[0] != roots[0] {
		t.Errorf("DistinctEntities gives %q first, want %q", got[0], roots[0])
	}
	if dropped != 1000 {
		t.Errorf("DistinctEntities drops %d names, want 1000", dropped)
	}

	if note := DroppedNote(s.EntitiesDropped); !strings.Contains(note, "1000 more") || DroppedNote(0) != "" {
		t.Fatalf("DroppedNote: %q", note)
	}

	// A root cause named only past the bound is not found.
	late := gt.Score(append(manyEntities(roots[:1], MaxEntities-1), roots[1]))
	if got, want := counts(late), fmt.Sprintf("score 0, 1 tp, %d fp, 1 found, 1 dropped", MaxEntities); got != want {
		t.Fatalf("a root cause past the bound: %s, want %s", got, want)
	}

	// At the bound nothing is dropped.
	if at := gt.Score(manyEntities(roots, MaxEntities-2)); at.EntitiesDropped != 0 || len(at.Predictions) != MaxEntities {
		t.Fatalf("at the bound: %d predictions, %d dropped", len(at.Predictions), at.EntitiesDropped)
	}
}
