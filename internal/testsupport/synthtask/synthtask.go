// Package synthtask generates a task for a test and reads its answer key back, for the tests
// that score solvers (the naive ones, the baseline) on generated seeds.
package synthtask

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot/synth"
)

// Generate writes the task of seed into dir and returns what the generator says of it and
// its parsed ground truth.
func Generate(t testing.TB, dir string, seed uint64) (*synth.Result, *grader.GroundTruth) {
	t.Helper()
	res, err := synth.Generate(dir, synth.Options{Seed: seed})
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join(dir, data.GroundTruthFile))
	if err != nil {
		t.Fatal(err)
	}
	gt, err := grader.ParseGroundTruth(doc)
	if err != nil {
		t.Fatal(err)
	}
	return res, gt
}
