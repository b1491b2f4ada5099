package snapshot_test

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/snapshot"
	"github.com/aa-grade/aa-grade/snapshot/synth"
)

// lookup is the catalogue's entry of an entity, or nil.
func lookup(c *snapshot.Catalog, entity string) *snapshot.CatalogEntry {
	for _, e := range c.Entries() {
		if e.Entity == entity {
			return e
		}
	}
	return nil
}

// TestCatalogOfAGeneratedSnapshot checks the catalogue on a generated task: cluster-scoped
// objects, sightings over time, and objects named only by events or alerts.
func TestCatalogOfAGeneratedSnapshot(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "task")
	res, err := synth.Generate(dir, synth.Options{Fault: "network-chaos", Seed: 5})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := snapshot.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	c := snap.Catalog
	var pod *snapshot.CatalogEntry
	for _, e := range c.Entries() {
		if e.Ref.Kind == "Pod" && e.Ref.Namespace == "otel-demo" && e.Ref.Name[:5] == "cart-" {
			pod = e
		}
	}
	if pod == nil {
		t.Fatal("no cart pod in the catalogue")
	}
	if !pod.LastSeen.After(pod.FirstSeen) {
		t.Errorf("a pod seen in every dump has first %v last %v", pod.FirstSeen, pod.LastSeen)
	}
	for _, entity := range []string{"Namespace/otel-demo", "Namespace/chaos-mesh", res.RootCauses[0]} {
		if lookup(c, entity) == nil {
			t.Errorf("%s is not in the catalogue", entity)
		}
	}
	nodes := 0
	for _, e := range c.Entries() {
		if e.Ref.Kind == "Node" {
			nodes++
			if e.Entity != "Node/"+e.Ref.Name {
				t.Errorf("a node is written %s", e.Entity)
			}
		}
	}
	if nodes < 3 {
		t.Errorf("%d nodes", nodes)
	}
	chaos := lookup(c, res.RootCauses[0])
	if want := []string{"events", "objects"}; !slices.Equal(chaos.Sources, want) {
		t.Errorf("the NetworkChaos is named by %v, want %v", chaos.Sources, want)
	}
}

// TestCatalogFromAlertsAndEventsOnly: objects no dump shows are still catalogued when an
// event or an alert names them.
func TestCatalogFromAlertsAndEventsOnly(t *testing.T) {
	c := snapshot.NewCatalog()
	c.Add(snapshot.ObjectRef{Kind: "PodChaos", Namespace: "chaos-mesh", Name: "kill-cart"}, time.Time{}, "events")
	if e := lookup(c, "chaos-mesh/PodChaos/kill-cart"); e == nil || e.Sources[0] != "events" {
		t.Fatalf("event-only object: %+v", e)
	}
	c.Add(snapshot.ObjectRef{Kind: "Pod", Name: ""}, time.Time{}, "events") // unnamed: ignored
	if n := len(c.Entries()); n != 1 {
		t.Fatalf("%d entries", n)
	}
}
