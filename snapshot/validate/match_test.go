package validate

import (
	"slices"
	"strings"
	"testing"
)

func role(namespace bool, features ...string) entity {
	e := entity{namespace: namespace, role: map[string]float64{}}
	for _, f := range features {
		e.role[f] = 1
	}
	r := &roles{entities: []entity{e}}
	r.touches(nil) // to unit length
	return r.entities[0]
}

// TestMatchEntitiesIsTheBestAssignment: entities are matched so that the roles are most alike
// in sum, not each to its most alike in turn (which would as likely give the first service
// the second's match); a namespace never stands for a service, and an entity whose role is
// nowhere in the other task stands for none.
func TestMatchEntitiesIsTheBestAssignment(t *testing.T) {
	a := []entity{
		role(false, "kind Deployment", "op get", "op put"), // alike both of b's services, equally
		role(false, "kind Deployment", "op get"),           // alike only b's first
		role(true, "namespace", "kind Deployment"),
		role(false, "kind StatefulSet", "op scan"), // like nothing in b
	}
	b := []entity{
		role(false, "kind Deployment", "op get"),
		role(true, "namespace", "kind Deployment"),
		role(false, "kind Deployment", "op put"),
	}
	ix := roleIndex{}
	va, vb := ix.vectors(a), ix.vectors(b)
	if got, want := matchEntities(va, vb), []int{2, 0, 1, -1}; !slices.Equal(got, want) {
		t.Errorf("matched %v, want %v", got, want)
	}
	if got, want := matchEntities(vb, va), []int{1, 2, 0}; !slices.Equal(got, want) {
		t.Errorf("the other way: matched %v, want %v", got, want)
	}
	if got := matchEntities(va, nil); !slices.Equal(got, []int{-1, -1, -1, -1}) {
		t.Errorf("against no entity: matched %v, want none", got)
	}
}

// TestFeatureWrittenWithOtherSlots: a feature is written again with the slots of the entities
// matched, and not at all when one of its entities matches none.
func TestFeatureWrittenWithOtherSlots(t *testing.T) {
	p := parse("span {svc:0002} calls {svc:0000} in {ns:0001}", 1)
	if p.template != "span {svc} calls {svc} in {ns}" {
		t.Errorf("template %q", p.template)
	}
	var b strings.Builder
	if got, ok := p.as([]int{7, 12, 3}, &b); !ok || got != "span {svc:0003} calls {svc:0007} in {ns:0012}" {
		t.Errorf("written as %q, %v", got, ok)
	}
	if got, ok := p.as([]int{7, -1, 3}, &b); ok {
		t.Errorf("written as %q with an entity matched with none", got)
	}
}

// TestMaskCutsBeforeASlot: a feature cut to its bound is cut before a slot the cut would split,
// so that two tasks whose entities have other indexes cut it alike.
func TestMaskCutsBeforeASlot(t *testing.T) {
	r := &roles{index: map[string]int{}}
	r.add("cart", false)
	r.compile()
	if got := r.mask("log cart error in cart", 25); got != "log {svc:0000} error in …" {
		t.Errorf("cut to %q", got)
	}
	if got := r.mask("log cart error in cart", 100); got != "log {svc:0000} error in {svc:0000}" {
		t.Errorf("masked to %q", got)
	}
}

// TestSharedListsEachKindFirst: of the shared features, heaviest first, the first of each kind
// of evidence comes before the rest, and a metric's shape after the first of the other kinds.
func TestSharedListsEachKindFirst(t *testing.T) {
	listed := []shared{{"m1", "metric", 9}, {"m2", "metric", 8}, {"a1", "alert", 7}, {"a2", "alert", 6},
		{"s1", "span", 5}}
	var got []string
	for _, s := range eachKindFirst(listed) {
		got = append(got, s.feature)
	}
	if want := []string{"a1", "s1", "m1", "m2", "a2"}; !slices.Equal(got, want) {
		t.Errorf("listed %v, want %v", got, want)
	}
}
