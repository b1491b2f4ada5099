//go:build unix

package safefile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestReadRefusesWhatAHostileWriterCanPlant(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret")
	if err := os.WriteFile(secret, []byte("host secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(dir, "ok.json"), []byte(`{"a":1}`), 0o644))
	must(os.WriteFile(filepath.Join(dir, "big"), make([]byte, 101), 0o644))
	must(os.Symlink(secret, filepath.Join(dir, "abs-link")))
	must(os.Symlink("../"+filepath.Base(outside)+"/secret", filepath.Join(dir, "rel-link")))
	must(os.Symlink("ok.json", filepath.Join(dir, "inside-link")))
	must(syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(dir, "folder"), 0o755))

	root, err := os.OpenRoot(dir)
	must(err)
	defer root.Close()
	for _, c := range []struct {
		name string
		want error // nil: read
	}{
		{"ok.json", nil},
		{"inside-link", nil},
		{"abs-link", nil}, // any error: the link leaves the root
		{"rel-link", nil}, // the same, through ..
		{"fifo", ErrNotRegular},
		{"folder", ErrNotRegular},
		{"big", ErrTooLarge},
		{"missing", fs.ErrNotExist},
	} {
		b, err := Read(root, c.name, 100)
		switch {
		case strings.HasSuffix(c.name, "-link") && c.name != "inside-link":
			if err == nil || strings.Contains(string(b), "secret") {
				t.Errorf("%s: a link out of the root was followed: %q %v", c.name, b, err)
			}
		case c.want == nil:
			if err != nil || string(b) != `{"a":1}` {
				t.Errorf("%s: %q %v", c.name, b, err)
			}
		case !errors.Is(err, c.want):
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
}

func TestReadPathOfAFIFODoesNotBlock(t *testing.T) {
	path := filepath.Join(t.TempDir(), "agent_output.json")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	// With a blocking open this would wait forever for a writer; the test's own timeout is
	// the failure.
	if _, err := ReadPath(path, 100); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), "FIFO") {
		t.Fatalf("err = %v", err)
	}
}
