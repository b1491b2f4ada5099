package synth

import (
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkGenerate writes one task of the real fault mix a round (a new seed each time, so
// every fault kind's cost is in the mean), as tasks synth and the demo generator do.
func BenchmarkGenerate(b *testing.B) {
	seed := uint64(0)
	for b.Loop() {
		seed++
		if _, err := Generate(filepath.Join(b.TempDir(), fmt.Sprint(seed)), Options{Seed: seed}); err != nil {
			b.Fatal(err)
		}
	}
}
