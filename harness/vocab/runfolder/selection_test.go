package runfolder

import (
	"fmt"
	"slices"
	"testing"
)

func scenarios(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("Scenario-%d", i+1)
	}
	return ids
}

func TestSelectionLimit(t *testing.T) {
	ids := scenarios(5)
	if got := (Selection{Limit: 2}).Apply(ids); !slices.Equal(got, ids[:2]) {
		t.Fatalf("limit 2: %v", got)
	}
	if got := (Selection{Limit: 9}).Apply(ids); !slices.Equal(got, ids) {
		t.Fatalf("limit over the count: %v", got)
	}
	if got := (Selection{}).Apply(ids); !slices.Equal(got, ids) {
		t.Fatalf("no selection: %v", got)
	}
}

// TestSelectionSample: a sample is K tasks in the dataset's order, the same for the same seed
// (and for the same tasks listed in another order), another for another seed, and a task's
// place in it does not depend on the other tasks.
func TestSelectionSample(t *testing.T) {
	ids := scenarios(59)
	a := Selection{Sample: 10, Seed: 7}.Apply(ids)
	if len(a) != 10 || !slices.IsSortedFunc(a, func(x, y string) int { return slices.Index(ids, x) - slices.Index(ids, y) }) {
		t.Fatalf("sample %v", a)
	}
	reversed := slices.Clone(ids)
	slices.Reverse(reversed)
	if b := (Selection{Sample: 10, Seed: 7}).Apply(ids); !slices.Equal(a, b) {
		t.Fatalf("the same seed gave %v and %v", a, b)
	}
	if b := (Selection{Sample: 10, Seed: 7}).Apply(reversed); !sameSet(a, b) {
		t.Fatalf("the order of the list changed the sample: %v and %v", a, b)
	}
	if b := (Selection{Sample: 10, Seed: 8}).Apply(ids); slices.Equal(a, b) {
		t.Fatalf("seeds 7 and 8 gave the same sample %v", a)
	}
	// Growing the dataset keeps a sampled task ahead of the tasks it was ahead of.
	grown := Selection{Sample: 10, Seed: 7}.Apply(scenarios(80))
	for _, id := range grown {
		if slices.Index(ids, id) >= 0 && !slices.Contains(a, id) {
			t.Fatalf("%s is in the sample of the grown dataset but not of the first: %v, %v", id, a, grown)
		}
	}
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestSelectionIsConfiguration: a resume with another selection is refused, naming it.
func TestSelectionIsConfiguration(t *testing.T) {
	h := Header{Model: "m", Selection: Selection{Sample: 3, Seed: 1}}
	o := h
	o.Selection = Selection{Sample: 3, Seed: 2}
	if diff := h.Differences(o); !slices.Equal(diff, []string{"seed was 1, now 2"}) {
		t.Fatalf("differences %v", diff)
	}
	o.Selection = Selection{Limit: 3}
	if diff := h.Differences(o); len(diff) != 3 {
		t.Fatalf("differences %v", diff)
	}
}
