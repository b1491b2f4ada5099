package copytree

import (
	"os"
	"path/filepath"
	"testing"
)

func TestCopy(t *testing.T) {
	src, dst := t.TempDir(), filepath.Join(t.TempDir(), "copy")
	os.MkdirAll(filepath.Join(src, "a", "b"), 0o755)
	os.WriteFile(filepath.Join(src, "top.txt"), []byte("top"), 0o644)
	os.WriteFile(filepath.Join(src, "a", "b", "deep.txt"), []byte("deep"), 0o644)
	blob := filepath.Join(t.TempDir(), "blob")
	os.WriteFile(blob, []byte("blob"), 0o644)
	os.Symlink(blob, filepath.Join(src, "link"))
	if err := Copy(src, dst); err != nil {
		t.Fatal(err)
	}
	for file, want := range map[string]string{"top.txt": "top", "a/b/deep.txt": "deep", "link": "blob"} {
		if got, err := os.ReadFile(filepath.Join(dst, file)); err != nil || string(got) != want {
			t.Errorf("%s: %q, %v", file, got, err)
		}
	}
	if info, err := os.Lstat(filepath.Join(dst, "link")); err != nil || !info.Mode().IsRegular() {
		t.Errorf("a link was not copied as its file: %v", err)
	}
	if err := Copy(filepath.Join(src, "none"), dst); err == nil {
		t.Error("copying a missing folder succeeded")
	}
}
