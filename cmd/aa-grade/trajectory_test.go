package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsonschema"
)

// trajectorySchema is the published line format of trajectories
// (harness/vocab/runfolder/trajectory.schema.json, docs/run-folder.md), compiled once.
var trajectorySchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	return jsonschema.CompileFile(filepath.Join(moduleRoot, "harness", "vocab", "runfolder", "trajectory.schema.json"))
})

// checkTrajectories validates every line of every trajectory of the run folder run against
// the published schema, and counts the lines of each kind: the tests of each kind of run (the
// baseline, a provider, retries, rate limits, a judge, a replay) check the kinds they make.
func checkTrajectories(t *testing.T, run string) map[model.EventKind]int {
	t.Helper()
	kinds, err := trajectoryKinds(run, func(problem string) { t.Error(problem) })
	if err != nil {
		t.Fatal(err)
	}
	return kinds
}

// trajectoryKinds counts the lines of each kind of the trajectories of the run folder run,
// telling invalid each line the published schema refuses; an error stops the reading (no
// schema, no episode, a trajectory that cannot be read). The Go tests and the script tests'
// trajectorykinds share it.
func trajectoryKinds(run string, invalid func(problem string)) (map[model.EventKind]int, error) {
	schema, err := trajectorySchema()
	if err != nil {
		return nil, fmt.Errorf("the trajectory schema: %w", err)
	}
	kinds := map[model.EventKind]int{}
	episodes, _ := filepath.Glob(filepath.Join(run, runfolder.EpisodesDir, "*", "*"))
	if len(episodes) == 0 {
		return nil, fmt.Errorf("%s has no episode folders", run)
	}
	for _, dir := range episodes {
		f, err := runfolder.OpenTrajectory(dir)
		if err != nil {
			return nil, err
		}
		lines := runfolder.NewTrajectoryReader(f, func(model.EventKind) bool { return true })
		for line := range lines.Lines() {
			if line.Err != nil || !line.Whole {
				f.Close()
				return nil, fmt.Errorf("%s line %d: %v (whole: %v)", dir, line.N, line.Err, line.Whole)
			}
			if err := schema.Validate(line.Bytes); err != nil {
				invalid(fmt.Sprintf("%s line %d is not a trajectory line as the schema has it: %v\n%.500s", dir, line.N, err, line.Bytes))
			}
			kinds[line.Kind]++
		}
		f.Close()
		if err := lines.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	return kinds, nil
}

// wantKinds fails unless the trajectories of run hold lines of each of kinds.
func wantKinds(t *testing.T, run string, kinds ...model.EventKind) {
	t.Helper()
	got := checkTrajectories(t, run)
	if missing := missingKinds(got, kinds); len(missing) > 0 {
		t.Errorf("the trajectories of %s have no %s line (they have %v)", run, strings.Join(missing, ", "), got)
	}
}

// missingKinds are those of kinds that got counts no line of.
func missingKinds(got map[model.EventKind]int, kinds []model.EventKind) []string {
	var missing []string
	for _, k := range kinds {
		if got[k] == 0 {
			missing = append(missing, string(k))
		}
	}
	return missing
}
