package snapshot

import (
	"cmp"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// maxSpans bounds the spans a CallGraph remembers (about 60 bytes each): a real traces table
// holds a few hundred thousand; past the bound, later spans are not added.
const maxSpans = 2 << 20

// CallGraph gathers which service calls which from trace rows, one at a time, so that a
// reader already scanning a traces table for something else learns the topology in the same
// pass: a span whose parent span belongs to another service is a call from that service.
type CallGraph struct {
	services  map[string]uint32
	names     []string
	serviceOf map[uint64]uint32
	children  []spanChild
	// Truncated says more than maxSpans spans were offered and only the first were kept.
	Truncated bool
}

type spanChild struct {
	parent  uint64
	service uint32
}

// NewCallGraph is an empty call graph.
func NewCallGraph() *CallGraph {
	return &CallGraph{services: map[string]uint32{}, serviceOf: map[uint64]uint32{}}
}

// Add records the span of a traces row; false once the graph is full (Truncated).
func (g *CallGraph) Add(r Row) bool {
	if len(g.serviceOf) >= maxSpans {
		g.Truncated = true
		return false
	}
	name := strings.TrimSpace(r.Get("ServiceName"))
	if name == "" {
		return true
	}
	s, ok := g.services[name]
	if !ok {
		s = uint32(len(g.names))
		g.services[name] = s
		g.names = append(g.names, name)
	}
	g.serviceOf[spanKey(r.Get("SpanId"))] = s
	if parent := strings.TrimSpace(r.Get("ParentSpanId")); parent != "" {
		g.children = append(g.children, spanChild{spanKey(parent), s})
	}
	return true
}

// Services are the services that wrote spans, sorted.
func (g *CallGraph) Services() []string { return slices.Sorted(slices.Values(g.names)) }

// Calls are the calls seen, caller then callee, sorted, each once.
func (g *CallGraph) Calls() [][2]string {
	return slices.SortedFunc(maps.Keys(g.Counts()), func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
}

// Counts are how many times each call was seen, by caller and callee.
func (g *CallGraph) Counts() map[[2]string]int {
	counts := map[[2]string]int{}
	for _, c := range g.children {
		if p, ok := g.serviceOf[c.parent]; ok && p != c.service {
			counts[[2]string{g.names[p], g.names[c.service]}]++
		}
	}
	return counts
}

// spanKey packs a span id (16 hex digits in real traces) into 8 bytes; any other id is hashed.
func spanKey(id string) uint64 {
	id = strings.TrimSpace(id)
	if v, err := strconv.ParseUint(id, 16, 64); err == nil && len(id) == 16 {
		return v
	}
	h := fnv.New64a()
	_, _ = h.Write([]byte(id)) // a hash's Write never fails
	return h.Sum64()
}
