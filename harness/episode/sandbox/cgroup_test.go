//go:build linux

package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestCgroupNotMadeFailsTheStart: where the machine offers cgroups (so the guarantees promise
// the memory and process limits), a sandbox whose cgroup cannot be made does not start
// without its limits; where it offers none (a normal user), the sandbox starts, the
// guarantees saying which limit is missing.
func TestCgroupNotMadeFailsTheStart(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	notADir := filepath.Join(t.TempDir(), "cgroup-parent")
	testfs.Write(t, notADir, "a file, where the cgroup hierarchy should be\n")
	for _, b := range backends(t, false) {
		if b.Name() == NameDocker {
			continue // the daemon makes the container's cgroups
		}
		t.Run(b.Name(), func(t *testing.T) {
			withCgroups(t, cgroupLayout{parents: []string{notADir}, v2: true})
			f := newFixture(t)
			sb, err := b.Start(t.Context(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe,
				GuestArg: []string{GuestCommand}})
			if err == nil {
				sb.Close()
				t.Fatal("the sandbox started without the cgroup that bounds its memory and processes")
			}
			textcheck.Has(t, "the error", err.Error(), "bound the sandbox in a cgroup", notADir)

			withCgroups(t, cgroupLayout{reason: "aa-grade is not root, and delegated cgroups are not used yet"})
			run(t, start(t, b, newFixture(t)), "true")
		})
	}
}

// withCgroups makes the machine's cgroups look like l until the test ends.
func withCgroups(t *testing.T, l cgroupLayout) {
	saved := cgroups
	cgroups = func() cgroupLayout { return l }
	t.Cleanup(func() { cgroups = saved })
}

// TestCgroupsProbed: a layout whose parent takes no cgroup (a read-only cgroup file system, as
// root in a container sees it) is no layout, with the reason; one that takes them is kept.
func TestCgroupsProbed(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "cgroup-parent")
	testfs.Write(t, notADir, "a file, where the cgroup hierarchy should be\n")
	got := probed(cgroupLayout{parents: []string{notADir}, v2: true})
	if len(got.parents) != 0 {
		t.Errorf("a parent that takes no cgroup was kept: %+v", got)
	}
	textcheck.Has(t, "the reason", got.reason, "no cgroup can be made under "+notADir)
	parent := t.TempDir()
	if got := probed(cgroupLayout{parents: []string{parent}, v2: true}); len(got.parents) != 1 || !got.v2 {
		t.Errorf("a parent that takes cgroups was dropped: %+v", got)
	}
	if entries, _ := os.ReadDir(parent); len(entries) != 0 {
		t.Errorf("the probe left %d entries in %s", len(entries), parent)
	}
}
