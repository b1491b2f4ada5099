package validate

import (
	"hash/fnv"
	"regexp"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/snapshot"
)

// minCalls is how many times a call must be seen to count in the roles: a call seen once (a
// flag looked up at start) is lost by a copy that leaves out a fifth of its spans, while the
// calls that make up a shop's graph are seen tens of times in the smallest generated task.
// A higher bound, or a share of the most frequent call, measured worse (docs/benchmarks.md):
// it cuts through the calls a fault thins, which a copy then keeps on one side or the other.
const minCalls = 2

// refinements is how many times a service's role takes in its neighbours' roles: three
// steps of the call graph reach from the front door to the deepest service of the shops
// the benchmark records, and tell apart services that the first steps leave alike.
const refinements = 3

// roles names each workload, service and namespace of a task by its place in the task
// rather than by its name, so that a copy whose names were all replaced consistently has
// the same roles. A service's role starts as its workload's kind (none for a service only
// alerts or logs name) and whether it writes spans, then takes in, a step at a time
// (refinements), the roles of the services it calls and of those that call it, over the calls
// seen minCalls times (the Weisfeiler-Lehman refinement of graph isomorphism tests);
// a namespace's role is the roles of its workloads. Two services in the same place in the
// same graph share a role, which a copy cannot tell apart either; the features that touch
// them (alerts, events, errors) then say which of them it is.
type roles struct {
	of      map[string]string // name, as normalise leaves it -> role
	pattern *regexp.Regexp    // any of the names, whole, then a "service" suffix and what ends the name
}

func newRoles(calls *snapshot.CallGraph, named map[string]bool, workloads map[string]string,
	namespaces map[string][]string) *roles {
	label := map[string]string{}
	for name := range named {
		label[name] = ""
	}
	for name, kind := range workloads {
		label[name] = kind
	}
	traced := calls.Services()
	for _, name := range traced {
		label[name] += "+spans"
	}
	out, in := map[string][]string{}, map[string][]string{}
	for c, n := range calls.Counts() {
		if n < minCalls {
			continue
		}
		out[c[0]] = append(out[c[0]], c[1])
		in[c[1]] = append(in[c[1]], c[0])
	}
	for range refinements {
		next := make(map[string]string, len(label))
		for name, l := range label {
			next[name] = digest(l, "calls", neighbours(label, out[name]), "called by", neighbours(label, in[name]))
		}
		label = next
	}
	r := &roles{of: map[string]string{}}
	for name, l := range label {
		r.add(name, "{svc:"+l[:8]+"}", true)
	}
	for ns, names := range namespaces {
		var held []string
		for _, name := range names {
			held = append(held, label[name])
		}
		slices.Sort(held)
		r.add(ns, "{ns:"+digest(held...)[:8]+"}", false)
	}
	r.compile()
	return r
}

// add names name by role, and when bare the same without dashes too, as "ProductCatalog"
// spells the service "product-catalog" in span names ("oteldemo" is not the namespace).
func (r *roles) add(name, role string, bare bool) {
	n := normalise(name)
	if n == "" {
		return
	}
	r.of[n] = role
	if b := normalise(strings.ReplaceAll(name, "-", "")); bare && b != n {
		if _, taken := r.of[b]; !taken {
			r.of[b] = role
		}
	}
}

// compile makes the pattern of every name, longest first, so that "frontend-proxy" is
// masked whole rather than as "frontend" and a "-proxy". A name ends before a character
// that is not a letter, a digit or "_" (not at a word boundary: normalise ends some names
// in "#").
func (r *roles) compile() {
	names := make([]string, 0, len(r.of))
	for n := range r.of {
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

// mask replaces every name in the feature s by its role.
func (r *roles) mask(s string) string {
	if r.pattern == nil {
		return s
	}
	return r.pattern.ReplaceAllStringFunc(s, func(m string) string {
		sub := r.pattern.FindStringSubmatch(m)
		return r.of[sub[1]] + sub[2] + sub[3]
	})
}

// neighbours are the sorted roles of names (a role twice when two of them share it).
func neighbours(label map[string]string, names []string) string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, label[n])
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// digest is a hash of parts in 16 letters, with no digit for normalise to mask.
func digest(parts ...string) string {
	h := fnv.New64a()
	for _, p := range parts {
		_, _ = h.Write([]byte(p + "\x00")) // a hash's Write never fails
	}
	sum := h.Sum64()
	b := make([]byte, 16)
	for i := range b {
		b[i] = 'a' + byte(sum>>(4*i)&15)
	}
	return string(b)
}
