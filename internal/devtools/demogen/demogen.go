// Package demogen builds the demo dataset embedded in the binary: generated tasks drawn from
// the real benchmark's fault mix, validated, packed in the Hub layout.
package demogen

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/snapshot/pack"
	"github.com/aa-grade/aa-grade/snapshot/synth"
	"github.com/aa-grade/aa-grade/snapshot/validate"
)

// Task is one demo task: the faults injected and the seed.
type Task struct {
	Fault string
	Seed  uint64
}

// Tasks fixes the demo, Scenario-901 onwards: the real benchmark's mix in small (flagd
// ConfigMaps, chaos-mesh experiments and a Schedule, Deployments, a Pod, the Namespace) and
// one task with two independent root causes.
var Tasks = []Task{
	{"flag", 11}, {"network-chaos", 13}, {"schedule", 14}, {"stress-chaos", 15}, {"flag", 12}, {"pod-pending", 16},
	{"quota", 17}, {"env", 18}, {"http-chaos", 19}, {"bad-image", 20}, {"jvm-chaos", 21}, {"flag+netpol", 22},
}

// Build writes the demo dataset, in the Hub layout, to out (which must not exist or be
// empty). Every task must pass validation.
func Build(out string) error {
	work, err := os.MkdirTemp("", "demogen-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(work) }() // in the temporary folder, the system's to clean if it stays
	var tasks []data.Task
	for i, task := range Tasks {
		id := fmt.Sprintf("Scenario-%d", 901+i)
		dir := filepath.Join(work, id)
		if _, err := synth.Generate(dir, synth.Options{Fault: task.Fault, Seed: task.Seed}); err != nil {
			return err
		}
		gt, err := os.ReadFile(filepath.Join(dir, data.GroundTruthFile))
		if err != nil {
			return err
		}
		t := data.Task{ID: id, Dir: dir, GroundTruth: gt}
		if r := validate.Task(t); r.Errors() > 0 {
			return fmt.Errorf("demo task %s (%s) fails validation: %+v", id, task.Fault, r.Findings)
		}
		tasks = append(tasks, t)
	}
	return pack.Write(out, tasks, pack.Options{Split: data.SplitPublic})
}
