package validate

import (
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
)

// The weights of what makes up an entity's role. What a service is and does (its kind, its
// image, the operations it serves) weighs most; its callers' and callees' the same at
// neighbourWeight, so that a call lost changes a part of two roles, not every role; the
// features that touch it (alerts, events, errors) least, enough to tell apart services
// alike in every other way, and to give a role to services only alerts or logs name.
const (
	neighbourWeight = 0.5
	touchWeight     = 0.3
)

// roles names each workload, service and namespace of a task (its entities) by a slot,
// "{svc:0003}" or "{ns:0000}", in place of its name, and describes each by its role: what it is
// and what it does, never its name. Two tasks are compared through the assignment of one's
// entities to the other's that makes their roles most alike (matchEntities), so that a copy
// whose names were all replaced consistently compares as the original, and a copy that lost
// a call, an operation or an error line still matches each service with its own.
type roles struct {
	index    map[string]int // name, as normalise leaves it -> entity
	entities []entity
	pattern  *regexp.Regexp // any of the names, whole, then a "service" suffix and what ends the name
}

// entity is one workload, service or namespace, by its role: features with weights, to unit
// length once complete.
type entity struct {
	namespace bool // matched only with namespaces, as services only with services
	role      map[string]float64
}

// slot is how an entity is written in a feature: its class and its index in the task, in
// digits as many for every index (padded), so that a feature cut to maxFeatureText is cut at
// the same place whichever entities it names.
func (r *roles) slot(i int) string {
	if r.entities[i].namespace {
		return "{ns:" + padded(i) + "}"
	}
	return "{svc:" + padded(i) + "}"
}

// newRoles gathers the entities of a reading and the part of their roles the reading gives;
// touches adds the part the task's features give.
func newRoles(rd *reading) *roles {
	r := &roles{index: map[string]int{}}
	names := map[string]bool{}
	for name := range rd.named {
		names[name] = true
	}
	for name := range rd.workloads {
		names[name] = true
	}
	for _, name := range rd.calls.Services() {
		names[name] = true
	}
	for _, name := range slices.Sorted(maps.Keys(names)) {
		r.add(name, false)
	}
	for _, ns := range slices.Sorted(maps.Keys(rd.namespaces)) {
		r.add(ns, true)
	}
	r.compile()
	local := map[string]map[string]float64{}
	for name := range names {
		local[name] = r.localRole(rd, name)
	}
	for name := range names {
		addRole(r.entity(name), local[name], 1, "")
	}
	for c, n := range rd.calls.Counts() {
		w := neighbourWeight * (1 + math.Log(float64(n))) / 4
		addRole(r.entity(c[0]), local[c[1]], w, "calls ")
		addRole(r.entity(c[1]), local[c[0]], w, "called by ")
	}
	for ns, held := range rd.namespaces {
		e := r.entity(ns)
		if e == nil || !e.namespace {
			continue // a namespace named as a service is: the service's entity stands for both
		}
		e.role["namespace"] = 1
		for _, name := range held {
			addRole(e, local[name], neighbourWeight/float64(len(held)), "holds ")
		}
	}
	return r
}

// localRole is what a service is and does by itself: its workload's kind (none for a
// service only alerts or logs name), whether it writes spans, its images and the operations
// it serves, every name in them masked.
func (r *roles) localRole(rd *reading, name string) map[string]float64 {
	kind := rd.workloads[name]
	if kind == "" {
		kind = "none"
	}
	out := map[string]float64{"kind " + kind: 1}
	if _, traced := rd.ops[name]; traced {
		out["spans"] = 1
	}
	for op, n := range rd.ops[name] {
		out["op "+r.generic(normalise(op))] += (1 + math.Log(float64(n))) / 4
	}
	for image := range rd.images[name] {
		out["image "+r.generic(normalise(image))] = 1
	}
	return out
}

// addRole adds the features of role to e's, by weight, each prefixed.
func addRole(e *entity, role map[string]float64, weight float64, prefix string) {
	if e == nil {
		return
	}
	for f, w := range role {
		e.role[prefix+f] += weight * w
	}
}

// touches adds to each entity the features that name it, as their templates (every entity a
// "{svc}"), and brings every role to unit length.
func (r *roles) touches(features map[string]float64) {
	for k, w := range features {
		p := parse(k, w)
		for _, i := range p.slots {
			if i < len(r.entities) {
				r.entities[i].role["touched by "+p.template] += touchWeight * w
			}
		}
	}
	for _, e := range r.entities {
		var sum float64
		for _, w := range e.role {
			sum += w * w
		}
		if sum == 0 {
			continue
		}
		for f, w := range e.role {
			e.role[f] = w / math.Sqrt(sum)
		}
	}
}

func (r *roles) entity(name string) *entity {
	if i, ok := r.index[normalise(name)]; ok {
		return &r.entities[i]
	}
	return nil
}

// add makes name an entity, and when a service the same without dashes too, as
// "ProductCatalog" spells the service "product-catalog" in span names ("oteldemo" is not the
// namespace). A name already an entity stays the one it is.
func (r *roles) add(name string, namespace bool) {
	n := normalise(name)
	if _, taken := r.index[n]; n == "" || taken {
		return
	}
	r.index[n] = len(r.entities)
	r.entities = append(r.entities, entity{namespace: namespace, role: map[string]float64{}})
	if b := normalise(strings.ReplaceAll(name, "-", "")); !namespace && b != n {
		if _, taken := r.index[b]; !taken {
			r.index[b] = r.index[n]
		}
	}
}

// compile makes the pattern of every name, longest first, so that "frontend-proxy" is
// masked whole rather than as "frontend" and a "-proxy". A name ends before a character
// that is not a letter, a digit or "_" (not at a word boundary: normalise ends some names
// in "#").
func (r *roles) compile() {
	names := make([]string, 0, len(r.index))
	for n := range r.index {
		names = append(names, regexp.QuoteMeta(n))
	}
	if len(names) == 0 {
		return
	}
	slices.SortFunc(names, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(a, b)
	})
	r.pattern = regexp.MustCompile(`\b(` + strings.Join(names, "|") + `)(service)?([^a-z0-9_]|$)`)
}

// mask replaces every name in the feature s by its entity's slot, and cuts it to n bytes,
// before a slot the cut would split (whose index would then tell two tasks' features apart).
func (r *roles) mask(s string, n int) string {
	return cutSlot.ReplaceAllString(clip(r.replace(s, r.slot), n), "…")
}

// cutSlot is the start of a slot at the end of a feature cut.
var cutSlot = regexp.MustCompile(`\{(?:s|sv|svc|svc:\d*|n|ns|ns:\d*)?…$`)

// generic replaces every name in s by its class alone, for a role, which must not say which
// entity it is.
func (r *roles) generic(s string) string {
	return r.replace(s, func(i int) string {
		if r.entities[i].namespace {
			return "{ns}"
		}
		return "{svc}"
	})
}

func (r *roles) replace(s string, with func(int) string) string {
	if r.pattern == nil {
		return s
	}
	return r.pattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := r.pattern.FindStringSubmatch(m)
		return with(r.index[sub[1]]) + sub[2] + sub[3]
	})
}

// slotPattern finds the slots of a feature.
var slotPattern = regexp.MustCompile(`\{(?:svc|ns):(\d+)\}`)
