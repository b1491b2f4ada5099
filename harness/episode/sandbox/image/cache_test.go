package image

import (
	"bytes"
	"os"
	"strconv"
	"testing"
)

// bytesRead is what this process has read so far, by /proc/self/io (read and pread calls,
// page cache hits included).
func bytesRead(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		t.Skip("no /proc/self/io here")
	}
	for line := range bytes.Lines(b) {
		if v, ok := bytes.CutPrefix(line, []byte("rchar: ")); ok {
			n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Skip("no rchar in /proc/self/io")
	return 0
}

// TestUnpackReadsNoLayerOfACachedSave: a run after the first finds the root of a `docker
// save` tarball in the cache from its manifest and config alone, without reading (or
// copying out) its layers.
func TestUnpackReadsNoLayerOfACachedSave(t *testing.T) {
	const layerSize = 32 << 20
	saved := bigSave(t, layerSize)
	cache := t.TempDir()
	before := bytesRead(t)
	root, err := Unpack(saved, cache)
	if err != nil {
		t.Fatal(err)
	}
	if first := bytesRead(t) - before; first < layerSize {
		t.Fatalf("the first unpack read %d bytes, less than the layer: this test cannot see reads", first)
	}
	if info, err := os.Stat(root + "/big"); err != nil || info.Size() != layerSize {
		t.Fatalf("the layer's file: %v %v", info, err)
	}
	before = bytesRead(t)
	again, err := Unpack(saved, cache)
	if err != nil || again != root {
		t.Fatalf("second unpack: %s %v, want the cached %s", again, err, root)
	}
	if second := bytesRead(t) - before; second > 1<<20 {
		t.Fatalf("the second unpack read %d bytes of a tarball whose root is cached (its layer is %d)", second, layerSize)
	}
	if left, _ := os.ReadDir(cache); len(left) != 1 {
		t.Fatalf("the cache holds %v, want the root alone", left)
	}
}
