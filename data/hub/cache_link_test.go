package hub

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestLinkWithoutSymlinks: where symlinks cannot be made (Windows without Developer Mode), or
// are made but do not resolve (Wine), the snapshot's file is a regular file with the blob's
// content, and linking it again keeps it so.
func TestLinkWithoutSymlinks(t *testing.T) {
	const repo, commit, etag = "o/n", "0123456789abcdef0123456789abcdef01234567", "e1"
	for name, fake := range map[string]func(string, string) error{
		"refused":    func(string, string) error { return errors.New("A required privilege is not held by the client.") },
		"unresolved": func(_, link string) error { return os.Symlink("no-such-blob", link) },
	} {
		t.Run(name, func(t *testing.T) {
			saved := symlink
			symlink = fake
			defer func() { symlink = saved }()
			c := Cache{Dir: t.TempDir()}
			blob := c.BlobPath(repo, etag)
			if err := os.MkdirAll(filepath.Dir(blob), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(blob, []byte("content\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if err := c.Link(repo, commit, "sre/a.tsv", etag); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(c.SnapshotDir(repo, commit), "sre", "a.tsv")
			info, err := os.Lstat(file)
			if err != nil || !info.Mode().IsRegular() {
				t.Fatalf("the snapshot's file: %v %v, want a regular file", info, err)
			}
			if b, _ := os.ReadFile(file); string(b) != "content\n" {
				t.Errorf("the snapshot's file holds %q", b)
			}
			if !c.Linked(repo, commit, "sre/a.tsv", 8) {
				t.Error("not Linked")
			}
			entries, _ := os.ReadDir(filepath.Dir(file))
			if len(entries) != 1 {
				t.Errorf("beside it: %v, want nothing (no stray .tmp)", entries)
			}
		})
	}
}
