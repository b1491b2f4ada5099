package image

import (
	"archive/tar"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkUnpackCached measures a run's use of a `docker save` tarball whose root file
// system is in the cache already (every run after the first): a 256 MiB layer, or the
// tarball AA_GRADE_BENCH_SAVED names (docker save of the reference image: about 340 MB).
func BenchmarkUnpackCached(b *testing.B) {
	saved := os.Getenv("AA_GRADE_BENCH_SAVED")
	if saved == "" {
		saved = bigSave(b, 256<<20)
	}
	cache := b.TempDir()
	if _, err := Unpack(saved, cache); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Unpack(saved, cache); err != nil {
			b.Fatal(err)
		}
	}
}

// bigSave writes a legacy `docker save` tarball of one layer holding a file of size bytes.
func bigSave(b testing.TB, size int64) string {
	b.Helper()
	dir := b.TempDir()
	layer, err := os.Create(filepath.Join(dir, "layer.tar"))
	if err != nil {
		b.Fatal(err)
	}
	tw := tar.NewWriter(layer)
	tw.WriteHeader(&tar.Header{Name: "big", Mode: 0o644, Size: size, Typeflag: tar.TypeReg})
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i)
	}
	for n := int64(0); n < size; n += int64(len(chunk)) {
		tw.Write(chunk[:min(int64(len(chunk)), size-n)])
	}
	tw.Close()
	layerSize, _ := layer.Seek(0, 1)
	cfg := config(nil)
	manifest, _ := json.Marshal([]any{map[string]any{"Config": "cfg.json", "Layers": []string{"l/layer.tar"}}})
	path := filepath.Join(dir, "image.tar")
	out, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	sw := tar.NewWriter(out) // layers first, manifest.json last, as docker save writes them
	sw.WriteHeader(&tar.Header{Name: "l/layer.tar", Mode: 0o644, Size: layerSize, Typeflag: tar.TypeReg})
	layer.Seek(0, 0)
	if _, err := layer.WriteTo(sw); err != nil {
		b.Fatal(err)
	}
	for _, f := range []struct {
		name string
		body []byte
	}{{"cfg.json", cfg}, {"manifest.json", manifest}} {
		sw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), Typeflag: tar.TypeReg})
		sw.Write(f.body)
	}
	sw.Close()
	if err := out.Close(); err != nil {
		b.Fatal(err)
	}
	layer.Close()
	os.Remove(layer.Name())
	return path
}
