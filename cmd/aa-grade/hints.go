package main

import (
	"errors"
	"fmt"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// The libraries say what is wrong; the commands, which know their flags, add the flag or the
// command that fixes it. Each hint goes at the end of the error's one line and keeps its chain.

// modelSpecError is err of the model value of flag (--model, --judge), saying where the
// presets are listed when the value named none.
func modelSpecError(flag string, err error) error {
	if errors.Is(err, models.ErrNotPreset) {
		return fmt.Errorf("%s: %w; aa-grade models lists them", flag, err)
	}
	return fmt.Errorf("%s: %w", flag, err)
}

// isolationHint offers --sandbox none, of run, doctor and tasks validate, where no isolating
// backend works.
func isolationHint(err error) error {
	if errors.Is(err, sandbox.ErrNoIsolation) {
		return fmt.Errorf("%w, or run with --sandbox none at your own risk", err)
	}
	return err
}

// imageHint offers --sandbox-image, of run and doctor, for an image the Docker daemon lacks.
func imageHint(err error) error {
	if errors.Is(err, sandbox.ErrNoImage) {
		return fmt.Errorf("%w, or name another with --sandbox-image", err)
	}
	return err
}

// repairHint names aa-grade repair, of every command, for a run folder whose run.json is lost
// or unreadable, once.
func repairHint(err error) error {
	var broken *runfolder.HeaderError
	var hinted *repairHinted
	if errors.As(err, &broken) && !errors.As(err, &hinted) {
		return &repairHinted{err: err, dir: broken.Dir}
	}
	return err
}

// repairHinted is an error of a broken run folder with the repair named.
type repairHinted struct {
	err error
	dir string
}

func (e *repairHinted) Error() string {
	return fmt.Sprintf("%v; aa-grade repair %s rebuilds %s from %s and the trajectories", e.err, e.dir,
		runfolder.HeaderFile, runfolder.ResultsFile)
}

func (e *repairHinted) Unwrap() error { return e.err }
