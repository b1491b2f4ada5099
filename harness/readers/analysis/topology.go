package analysis

import (
	"cmp"
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/snapshot"
)

// TracesFile is the snapshot table the call topology is read from.
const TracesFile = "otel_traces_raw.tsv"

// maxSpans bounds the spans remembered while reading a traces table (about 60 bytes each):
// a real table holds a few hundred thousand; past the bound, later spans are not read and
// the topology is what the first ones show.
const maxSpans = 2 << 20

// Topology is which service calls which, as a snapshot's traces show it: a span whose parent
// span belongs to another service is a call from that service.
type Topology struct {
	Services []string    // sorted
	Calls    [][2]string // caller, callee; sorted, each once
	// Truncated says the table held more than maxSpans spans and only the first were read.
	Truncated bool
}

// ReadTopology reads the call topology of the snapshot folder dir: nil, and no error, when it
// has no traces table. Broken records are skipped (snapshot.ScanTable).
func ReadTopology(dir string) (*Topology, error) {
	path := filepath.Join(dir, TracesFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	services := map[string]uint32{}
	var names []string
	serviceOf := map[uint64]uint32{}
	type child struct {
		parent  uint64
		service uint32
	}
	var children []child
	topo := &Topology{}
	stop := errors.New("enough spans")
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		if len(serviceOf) >= maxSpans {
			topo.Truncated = true
			return stop
		}
		name := strings.TrimSpace(r.Get("ServiceName"))
		if name == "" {
			return nil
		}
		s, ok := services[name]
		if !ok {
			s = uint32(len(names))
			services[name] = s
			names = append(names, name)
		}
		serviceOf[spanKey(r.Get("SpanId"))] = s
		if parent := strings.TrimSpace(r.Get("ParentSpanId")); parent != "" {
			children = append(children, child{spanKey(parent), s})
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, fmt.Errorf("read the call topology: %w", err)
	}
	seen := map[[2]string]bool{}
	for _, c := range children {
		p, ok := serviceOf[c.parent]
		if !ok || p == c.service {
			continue
		}
		call := [2]string{names[p], names[c.service]}
		if !seen[call] {
			seen[call] = true
			topo.Calls = append(topo.Calls, call)
		}
	}
	topo.Services = slices.Sorted(slices.Values(names))
	slices.SortFunc(topo.Calls, func(a, b [2]string) int {
		return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1]))
	})
	return topo, nil
}

// spanKey packs a span id (16 hex digits in real traces) into 8 bytes; any other id is hashed.
func spanKey(id string) uint64 {
	id = strings.TrimSpace(id)
	if v, err := strconv.ParseUint(id, 16, 64); err == nil && len(id) == 16 {
		return v
	}
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}
