// Package demogen builds the demo dataset embedded in the binary: one generated task per
// fault kind, validated, packed in the Hub layout.
package demogen

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/snapshot"
	"github.com/aa-grade/aa-grade/snapshot/pack"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// Seeds fixes the demo: task Scenario-90N is fault synth.Faults[N-1] with seed Seeds[N-1].
var Seeds = []uint64{11, 12, 13, 14, 15, 16, 17, 18}

// Build writes the demo dataset, in the Hub layout, to out (which must not exist or be
// empty). Every task must pass validation.
func Build(out string) error {
	work, err := os.MkdirTemp("", "demogen-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	var tasks []data.Task
	for i, fault := range synth.Faults {
		id := fmt.Sprintf("Scenario-%d", 901+i)
		dir := filepath.Join(work, id)
		if _, err := synth.Generate(dir, synth.Options{Fault: fault, Seed: Seeds[i]}); err != nil {
			return err
		}
		gt, err := os.ReadFile(filepath.Join(dir, snapshot.GroundTruthFile))
		if err != nil {
			return err
		}
		t := data.Task{ID: id, Dir: dir, GroundTruth: gt}
		if r := validate.Task(t); r.Errors() > 0 {
			return fmt.Errorf("demo task %s (%s) fails validation: %+v", id, fault, r.Findings)
		}
		tasks = append(tasks, t)
	}
	return pack.Write(out, tasks, pack.Options{Split: "public"})
}
