package data

import (
	"context"
	"fmt"
	"testing"

	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakehub"
)

// BenchmarkPull256MiB pulls 16 files of 16 MiB from an in-process fake Hub into a fresh
// cache (download, hashing, verification, linking). The whole-command comparison with curl
// is `go run ./internal/devtools/pullbench` (make bench).
func BenchmarkPull256MiB(b *testing.B) {
	h := fakehub.New()
	defer h.Close()
	files := fakehub.SampleDataset(16, 16<<20)
	h.ServeSample(testRepo, files)
	spec, _ := ParseHubSpec("hf:" + testRepo)
	b.SetBytes(16 * 16 << 20)
	for b.Loop() {
		cfg := hub.Config{Endpoint: h.URL, CacheDir: b.TempDir(), Retry: hub.DefaultRetry}
		res, err := Pull(context.Background(), cfg, spec, PullOptions{})
		if err != nil || res.Files != len(files) {
			b.Fatal(fmt.Sprint(res, err))
		}
	}
}
