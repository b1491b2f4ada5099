package harness

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTrajectoryCompression: a finished episode's trajectory is compressed in place, reads back
// the same, and a plain one (an episode still running) reads as it is.
func TestTrajectoryCompression(t *testing.T) {
	dir := t.TempDir()
	content := strings.Repeat(`{"kind":"request","body":{"messages":["the same conversation again"]}}`+"\n", 500)
	os.WriteFile(filepath.Join(dir, TrajectoryFile), []byte(content), 0o644)
	read := func() string {
		f, err := OpenTrajectory(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read() != content {
		t.Fatal("the plain trajectory reads differently")
	}
	if err := CompressTrajectory(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, TrajectoryFile)); !os.IsNotExist(err) {
		t.Errorf("the plain file is still there: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, TrajectoryFile+".zst"))
	if err != nil || info.Size()*20 > int64(len(content)) {
		t.Fatalf("compressed: %v, %v bytes for %d", err, info, len(content))
	}
	if read() != content {
		t.Fatal("the compressed trajectory reads differently")
	}
	if err := CompressTrajectory(t.TempDir()); err == nil {
		t.Error("compressing a folder without a trajectory succeeded")
	}
}
