package snapshot

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestReadObjectDumps: rows within a minute of a dump's first are one dump, and the objects
// added, removed or changed between two dumps are told apart from those left alone.
func TestReadObjectDumps(t *testing.T) {
	row := func(ts, body string) string { return ts + "\t" + body + "\n" }
	pod := func(name, phase string) string {
		return `{"kind":"Pod","metadata":{"namespace":"otel-demo","name":"` + name + `"},"status":{"phase":"` + phase + `"}}`
	}
	text := "Timestamp\tBody\n" +
		row("2025-01-01 10:00:00.000000000", pod("a", "Running")) +
		row("2025-01-01 10:00:30.000000000", pod("b", "Running")) +
		row("2025-01-01 10:00:40.000000000", `{"kind":"Node","metadata":{"name":"n1"}}`) +
		row("2025-01-01 10:00:50.000000000", `not json`) +
		row("2025-01-01 10:05:00.000000000", pod("a", "Running")) +
		row("2025-01-01 10:05:10.000000000", pod("b", "Failed")) +
		row("2025-01-01 10:05:20.000000000", pod("c", "Running"))
	path := filepath.Join(t.TempDir(), "k8s_objects_raw.tsv")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dumps, err := ReadObjectDumps(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(dumps) != 2 {
		t.Fatalf("%d dumps, want 2", len(dumps))
	}
	for i, d := range dumps {
		if len(d.Bodies) != 3 {
			t.Errorf("dump %d has %d objects, want 3", i+1, len(d.Bodies))
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	var changed []string
	for _, ref := range ChangedObjects(dumps[0], dumps[1]) {
		changed = append(changed, EntityOf(ref))
	}
	slices.Sort(changed)
	if want := "Node/n1 otel-demo/Pod/b otel-demo/Pod/c"; strings.Join(changed, " ") != want {
		t.Errorf("changed %v, want %s", changed, want)
	}
}
