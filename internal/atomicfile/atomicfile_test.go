package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteReplacesAndLeavesNoTemporaryFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "report.md")
	for _, content := range []string{"first, longer\n", "second\n"} {
		if err := Write(path, []byte(content)); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read back %q, %v; want %q", got, err, content)
		}
	}
	info, err := os.Stat(path)
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("stat: %v, %v; want mode 0644", info, err)
	}
	if entries, _ := os.ReadDir(filepath.Dir(path)); len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
}

// TestWriteFailure: a folder in the way of the rename fails the write with an error naming
// the file, and leaves no temporary file and the folder as it was.
func TestWriteFailure(t *testing.T) {
	dir := t.TempDir()
	blocked := filepath.Join(dir, "report.md")
	if err := os.MkdirAll(filepath.Join(blocked, "child"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Write(blocked, []byte("new"))
	if err == nil || !strings.Contains(err.Error(), blocked) {
		t.Fatalf("err = %v, want an error naming %s", err, blocked)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("temporary file left behind: %v", entries)
	}
	if _, err := os.Stat(filepath.Join(blocked, "child")); err != nil {
		t.Fatalf("the folder in the way changed: %v", err)
	}
	if err := Write(filepath.Join(dir, "report.md", "child", "x", "y"), nil); err != nil {
		t.Fatalf("creating folders: %v", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(filepath.Join(file, "x"), []byte("new")); err == nil || !strings.Contains(err.Error(), file) {
		t.Fatalf("writing under a file: %v", err)
	}
}
