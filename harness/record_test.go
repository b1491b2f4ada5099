package harness

import (
	"bufio"
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

// TestReadTrajectoryLineSkipsOnlyTheLongLine: a line over the limit is an error and skipped,
// whether its newline comes in a later read of the buffer or in the read that crossed the
// limit; the next line is read whole, and a last line with no newline is not whole.
func TestReadTrajectoryLineSkipsOnlyTheLongLine(t *testing.T) {
	for _, long := range []int{50, 31} { // 16-byte buffer: the newline in a later read, or in the crossing one
		r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", long)+"\nnext\ncut"), 16)
		if _, whole, err := ReadTrajectoryLine(r, 30); err == nil || !whole {
			t.Errorf("%d bytes over a limit of 30: whole %v, %v; want whole and an error", long, whole, err)
		}
		if b, whole, err := ReadTrajectoryLine(r, 30); string(b) != "next" || !whole || err != nil {
			t.Errorf("after %d bytes: %q, whole %v, %v; want the next line", long, b, whole, err)
		}
		if b, whole, err := ReadTrajectoryLine(r, 30); string(b) != "cut" || whole || err != nil {
			t.Errorf("the last line: %q, whole %v, %v; want it not whole", b, whole, err)
		}
	}
}
