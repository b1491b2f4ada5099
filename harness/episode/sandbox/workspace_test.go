//go:build linux

package sandbox

import (
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestNestedSnapshotFoldersAreRead: a snapshot's file in a folder inside a folder is read as
// the others are. As root, bwrap makes the folders on the way to a bound file private (0700),
// and the guest, which keeps no capability to search a folder it no longer owns, must list
// them all before it hands any to the sandbox user: else the deeper ones stay root's, and
// their files are out of the model's reach.
func TestNestedSnapshotFoldersAreRead(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			testfs.Write(t, filepath.Join(f.snapshot, "logs", "checkout", "pod.log"), "line\n")
			r := run(t, start(t, b, f), "cat logs/checkout/pod.log")
			if r.Stdout != "line\n" || r.ExitCode != 0 {
				t.Fatalf("a file in a nested snapshot folder: %+v", r)
			}
		})
	}
}
