package synth_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot/synth"
)

// solve runs the investigator on a task and fails the test unless it names every root cause.
func solve(t *testing.T, label, dir string, gt *grader.GroundTruth) float64 {
	t.Helper()
	answer, err := investigate(dir)
	if err != nil {
		t.Fatalf("%s: %v", label, err)
	}
	s := gt.Score(answer)
	if s.RootCauses == 0 || s.RootCausesFound < s.RootCauses {
		t.Errorf("%s: the investigator names %v and finds %d of %d root causes", label, answer, s.RootCausesFound, s.RootCauses)
	}
	return s.Score
}

func readGroundTruth(t *testing.T, dir string) *grader.GroundTruth {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join(dir, data.GroundTruthFile))
	if err != nil {
		t.Fatal(err)
	}
	gt, err := grader.ParseGroundTruth(doc)
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

// TestTasksStaySolvable: however many decoys a generated task holds, an investigator that
// follows the evidence chain finds every root cause, for every fault kind, on seeds of the
// real mix and on the demo.
func TestTasksStaySolvable(t *testing.T) {
	if testing.Short() {
		t.Skip("generates 40 tasks")
	}
	type task struct {
		fault string
		seed  uint64
	}
	var tasks []task
	for i, kind := range append(slices.Clone(synth.Faults), "flag+netpol", "schedule+oom", "network-chaos+bad-image") {
		tasks = append(tasks, task{kind, uint64(300 + i)})
	}
	for seed := uint64(1); seed <= 24; seed++ {
		tasks = append(tasks, task{"", seed})
	}
	sum := 0.0
	for _, tk := range tasks {
		dir := filepath.Join(t.TempDir(), "task")
		res, err := synth.Generate(dir, synth.Options{Fault: tk.fault, Seed: tk.seed})
		if err != nil {
			t.Fatal(err)
		}
		sum += solve(t, fmt.Sprintf("seed %d (%s)", tk.seed, res.Fault), dir, readGroundTruth(t, dir))
	}
	t.Logf("generated tasks: the investigator scores %.3f over %d", sum/float64(len(tasks)), len(tasks))

	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ds, err := data.Open(context.Background(), data.DemoSpec, data.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sum = 0
	for _, tk := range ds.Tasks {
		gt, err := grader.ParseGroundTruth(tk.GroundTruth)
		if err != nil {
			t.Fatal(err)
		}
		sum += solve(t, tk.ID, tk.Dir, gt)
	}
	t.Logf("demo: the investigator scores %.3f", sum/float64(len(ds.Tasks)))
}
