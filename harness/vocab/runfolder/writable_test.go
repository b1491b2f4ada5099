package runfolder

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestCheckWritable: a folder the run can write passes, and each thing it could not write
// fails the check, named, without being changed: a read-only results.jsonl, a read-only
// episode folder, a read-only run folder. (Root writes anything: run as a user, make
// unprivileged-style.)
func TestCheckWritable(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes read-only files and folders")
	}
	for _, c := range []struct {
		name     string
		readOnly func(dir string) string // makes one thing read-only, and returns it
	}{
		{"results.jsonl", func(dir string) string { return filepath.Join(dir, ResultsFile) }},
		{"episode folder", func(dir string) string { return filepath.Join(dir, EpisodesDir, "Scenario-1", "1") }},
		{"run folder", func(dir string) string { return dir }},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			testfs.Write(t, filepath.Join(dir, ResultsFile), "{}\n")
			testfs.Write(t, filepath.Join(dir, EpisodesDir, "Scenario-1", "1", "submission.json"), "{}")
			f := &Folder{Dir: dir}
			if err := f.CheckWritable(); err != nil {
				t.Fatalf("a writable folder: %v", err)
			}
			target := c.readOnly(dir)
			info, err := os.Stat(target)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(target, info.Mode().Perm()&^0o222); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(target, info.Mode().Perm()) })
			err = f.CheckWritable()
			if !errors.Is(err, ErrNotWritable) {
				t.Fatalf("err = %v", err)
			}
			if got := err.Error(); len(got) < len(target) || got[:len(target)] != target {
				t.Errorf("the error does not start with %s: %v", target, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, ResultsFile)); string(b) != "{}\n" {
				t.Errorf("results.jsonl changed: %q", b)
			}
		})
	}
}

// TestEpisodeBytes: the mean size of the episodes' folders, and how many; none in a new folder.
func TestEpisodeBytes(t *testing.T) {
	dir := t.TempDir()
	f := &Folder{Dir: dir}
	if mean, n := f.EpisodeBytes(); mean != 0 || n != 0 {
		t.Errorf("a new folder: %d bytes, %d episodes", mean, n)
	}
	testfs.Write(t, filepath.Join(dir, EpisodesDir, "Scenario-1", "1", "trajectory.jsonl.zst"), "0123456789")
	testfs.Write(t, filepath.Join(dir, EpisodesDir, "Scenario-1", "2", "trajectory.jsonl.zst"), "0123456789012345678901234567890123456789")
	testfs.Write(t, filepath.Join(dir, EpisodesDir, "Scenario-1", "2", "submission.json"), "0123456789")
	if mean, n := f.EpisodeBytes(); mean != 30 || n != 2 {
		t.Errorf("%d bytes, %d episodes; want 30, 2", mean, n)
	}
}
