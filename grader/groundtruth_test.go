package grader

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
)

func mustParse(t *testing.T, doc string) *GroundTruth {
	t.Helper()
	gt, err := ParseGroundTruth([]byte(doc))
	if err != nil {
		t.Fatalf("ParseGroundTruth: %v", err)
	}
	return gt
}

func TestGroundTruthEnvelopes(t *testing.T) {
	flat := `
groups:
  - id: cart-1
    kind: Deployment
    namespace: shop
    filter: [cart\b]
    root_cause: true
`
	wrapped := `
apiVersion: itbench.io/v1
kind: GroundTruth
metadata: {name: x}
spec:
  groups:
    - id: cart-1
      kind: Deployment
      namespace: shop
      filter: [cart\b]
      rootCause: true
  recommendedActions: [{solution: {id: a}}]
`
	for name, doc := range map[string]string{"flat": flat, "wrapped": wrapped} {
		t.Run(name, func(t *testing.T) {
			gt := mustParse(t, doc)
			if len(gt.Groups) != 1 {
				t.Fatalf("%d groups, want 1: %+v", len(gt.Groups), gt.Groups)
			}
			g := gt.Groups[0]
			if g.ID != "cart-1" {
				t.Errorf("group id %q, want cart-1", g.ID)
			}
			if !g.RootCause {
				t.Errorf("the group is no root cause")
			}
			if g.Kind != "Deployment" {
				t.Errorf("group kind %q, want Deployment", g.Kind)
			}
			if t.Failed() {
				t.FailNow()
			}
			if gt.RootCauseSets() != 1 {
				t.Fatalf("root-cause sets = %d, want 1", gt.RootCauseSets())
			}
		})
	}
}

func TestGroundTruthGroupShapes(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: a, kind: ConfigMap, namespace: shop, name: flags, root_cause: true}
  - {id: b, kind: Pod, namespace: shop, filter: "cart-.*"}
  - {id: c, kind: Namespace, filter: [shop], namespace: null}
  - {id: d, kind: Service, filter: [x, y], unknown_key: 7, Root_Cause: "true"}
`)
	a, b, c, d := gt.Groups[0], gt.Groups[1], gt.Groups[2], gt.Groups[3]
	if a.Name != "flags" || len(a.Filters) != 0 {
		t.Errorf("name-only group = %+v", a)
	}
	if len(b.Filters) != 1 || b.Filters[0].Pattern != "cart-.*" {
		t.Errorf("string filter = %+v", b.Filters)
	}
	if c.Namespace != "" {
		t.Errorf("null namespace read as %q", c.Namespace)
	}
	if d.Namespace != "" {
		t.Errorf("a missing namespace read as %q", d.Namespace)
	}
	if len(d.Filters) != 2 {
		t.Errorf("a list filter read as %d filters, want 2: %+v", len(d.Filters), d.Filters)
	}
	if !d.RootCause {
		t.Errorf("a capitalised root cause key not read: %+v", d)
	}
}

func TestGroundTruthErrors(t *testing.T) {
	for name, tc := range map[string]struct{ doc, want string }{
		"no root cause":       {`groups: [{id: a, kind: Pod, filter: [x]}]`, "no group has root_cause"},
		"unknown alias":       {"groups: [{id: a, kind: Pod, filter: [x], root_cause: true}]\naliases: [[a, ghost]]", `unknown group id "ghost"`},
		"no filter nor name":  {`groups: [{id: a, kind: Pod, root_cause: true}]`, "a has neither filter nor name"},
		"no groups":           {`alerts: []`, "no groups"},
		"group without id":    {`groups: [{kind: Pod, filter: [x], root_cause: true}]`, "no id"},
		"group without kind":  {`groups: [{id: a, filter: [x], root_cause: true}]`, "a has no kind"},
		"not yaml":            {"groups: [\n  - {id: a", "not YAML"},
		"not a map":           {`[1, 2]`, "not a map"},
		"aliases not a list":  {"groups: [{id: a, kind: Pod, filter: [x], root_cause: true}]\naliases: 3", "aliases is not a list"},
		"too large":           {"# " + strings.Repeat("x", MaxGroundTruthBytes), "more than"},
		"excessive anchoring": {billionLaughs, "not YAML"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseGroundTruth([]byte(tc.doc))
			if !errors.Is(err, ErrGroundTruth) {
				t.Fatalf("err = %v, want ErrGroundTruth", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

const billionLaughs = `
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]
d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]
e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]
f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]
g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]
h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]
i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]
groups: *i
`

func TestAliasesMergeTransitively(t *testing.T) {
	gt := mustParse(t, `
groups:
  - {id: a, kind: Deployment, filter: [a], root_cause: true}
  - {id: b, kind: Pod, filter: [b]}
  - {id: c, kind: Service, filter: [c]}
  - {id: d, kind: Service, filter: [d]}
aliases: [[a, b], [b, c]]
`)
	if gt.setOf[0] != gt.setOf[2] || gt.setOf[1] != gt.setOf[2] {
		t.Fatalf("a, b, c not merged: %v", gt.setOf)
	}
	if gt.setOf[3] == gt.setOf[0] {
		t.Fatalf("d merged with a: %v", gt.setOf)
	}
	if gt.setCount != 2 || gt.RootCauseSets() != 1 {
		t.Fatalf("sets = %d, root-cause sets = %d", gt.setCount, gt.RootCauseSets())
	}
}

func TestDuplicateGroupIDsShareASet(t *testing.T) {
	// Scenario-18 lists one Schedule group id twice.
	gt := mustParse(t, `
groups:
  - {id: s, kind: Schedule, namespace: chaos-mesh, filter: [.*delay], root_cause: true}
  - {id: s, kind: Schedule, namespace: chaos-mesh, filter: [.*delay]}
`)
	if gt.setOf[0] != gt.setOf[1] || gt.RootCauseSets() != 1 {
		t.Fatalf("duplicate ids not merged: %v", gt.setOf)
	}
}

func TestGlobFilterIsAWarning(t *testing.T) {
	gt := mustParse(t, `groups: [{id: h, kind: HorizontalPodAutoscaler, filter: ["*.*"], root_cause: true}]`)
	if f := gt.Groups[0].Filters[0]; !f.Glob {
		t.Errorf("filter %+v is no glob", f)
	}
	if len(gt.Warnings) != 1 {
		t.Fatalf("warnings %q, want one", gt.Warnings)
	}
	if !strings.Contains(gt.Warnings[0], "shell glob") {
		t.Errorf("the warning %q does not say shell glob", gt.Warnings[0])
	}

}

// TestRealGroundTruthsLoad loads every public ground truth: IBM's YAML files and the
// ITBench-Evaluations JSON list.
func TestRealGroundTruthsLoad(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t), "ground-truth")
	files, err := filepath.Glob(filepath.Join(dir, "itbench-github", "*.yaml"))
	if err != nil || len(files) < 39 {
		t.Fatalf("found %d YAML ground truths (%v), want 39", len(files), err)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		gt, err := ParseGroundTruth(doc)
		if err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
			continue
		}
		if gt.RootCauseSets() == 0 {
			t.Errorf("%s: no root cause", filepath.Base(f))
		}
	}
	var list []json.RawMessage
	doc, err := os.ReadFile(filepath.Join(dir, "ibm-evaluations-ground_truths.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(doc, &list); err != nil || len(list) != 44 {
		t.Fatalf("evaluations list: %d entries, %v", len(list), err)
	}
	for i, raw := range list {
		if _, err := ParseGroundTruth(raw); err != nil {
			t.Errorf("evaluations entry %d: %v", i, err)
		}
	}
}

// FuzzParseGroundTruth checks that no document makes the ground-truth reader panic, and that
// an accepted one always has a root-cause set and consistent scoring sets.
func FuzzParseGroundTruth(f *testing.F) {
	f.Add([]byte(shopGT))
	f.Add([]byte(billionLaughs))
	f.Add([]byte("spec:\n  groups:\n    - {id: a, kind: Pod, filter: '*.*', rootCause: true}\n  aliases: [a]\n"))
	f.Fuzz(func(t *testing.T, doc []byte) {
		gt, err := ParseGroundTruth(doc)
		if err != nil {
			return
		}
		if gt.RootCauseSets() == 0 || len(gt.setOf) != len(gt.Groups) {
			t.Fatalf("accepted a ground truth without root cause or with broken sets: %+v", gt)
		}
		_ = gt.Score([]string{"otel-demo/Pod/a-1", "Namespace/x"})
	})
}

// TestPropagationsAndAlerts: the descriptive parts partial credit rests on are kept as
// written, in either envelope and key style; malformed items are skipped.
func TestPropagationsAndAlerts(t *testing.T) {
	for name, doc := range map[string]string{
		"flat": `
groups: [{id: cm, kind: ConfigMap, name: flagd-config, root_cause: true}, {id: cart, kind: Service, filter: ['cart\b']}]
alerts: [{id: HighRequestErrorRate, group_id: cart}, {id: Again, group_id: cart}, "not a map"]
propagations: [{source: cm, target: cart, condition: c}, {source: cm}, 7]`,
		"wrapped, camelCase": `
apiVersion: itbench.io/v1
kind: GroundTruth
spec:
  groups: [{id: cm, kind: ConfigMap, name: flagd-config, rootCause: true}, {id: cart, kind: Service, filter: ['cart\b']}]
  alerts: [{groupId: cart}]
  propagations: [{source: cm, target: cart}]`,
	} {
		gt, err := ParseGroundTruth([]byte(doc))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(gt.Propagations) != 1 || gt.Propagations[0] != (Propagation{Source: "cm", Target: "cart"}) {
			t.Errorf("%s: propagations %v", name, gt.Propagations)
		}
		if len(gt.Alerting) != 1 || gt.Alerting[0] != "cart" {
			t.Errorf("%s: alerting %v", name, gt.Alerting)
		}
	}
}
