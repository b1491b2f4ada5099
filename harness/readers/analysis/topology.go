package analysis

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/snapshot"
)

// TracesFile is the snapshot table the call topology is read from.
const TracesFile = "otel_traces_raw.tsv"

// Topology is which service calls which, as a snapshot's traces show it: a span whose parent
// span belongs to another service is a call from that service.
type Topology struct {
	Services []string    // sorted
	Calls    [][2]string // caller, callee; sorted, each once
	// Truncated says the table held more spans than a snapshot.CallGraph keeps, and only
	// the first were read.
	Truncated bool
}

// ReadTopology reads the call topology of the snapshot folder dir: nil, and no error, when it
// has no traces table. Broken records are skipped (snapshot.ScanTable).
func ReadTopology(dir string) (*Topology, error) {
	path := filepath.Join(dir, TracesFile)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	g := snapshot.NewCallGraph()
	stop := errors.New("enough spans")
	_, err := snapshot.ScanTable(path, func(r snapshot.Row) error {
		if !g.Add(r) {
			return stop
		}
		return nil
	})
	if err != nil && !errors.Is(err, stop) {
		return nil, fmt.Errorf("read the call topology: %w", err)
	}
	return &Topology{Services: g.Services(), Calls: g.Calls(), Truncated: g.Truncated}, nil
}
