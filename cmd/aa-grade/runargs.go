package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// runArgs is what the RUN... arguments of report and view name: the run folders, a folder of
// runs (runs/) standing for the runs in it, and each folder skipped with why, so that one
// folder that is not a run (an export, a run that lost its run.json) never hides the others.
type runArgs struct {
	dirs []string
	// skipped are the folders named that hold no run, and the runs that cannot be read: the
	// command's result is bad (exit 1). left are the folders in a folder of runs that hold
	// none (an export beside the runs): named, and no failure.
	skipped, left []error
}

// expandRuns reads the RUN... arguments: a run folder is kept; a folder holding no run.json
// but run folders is each of them, in name order; anything else is skipped, saying why.
func expandRuns(args []string) runArgs {
	var ra runArgs
	for _, arg := range args {
		_, err := runfolder.ReadHeader(arg)
		switch {
		case err == nil:
			ra.dirs = append(ra.dirs, arg)
		case errors.Is(err, runfolder.ErrNotRunFolder):
			inside, ok := runsIn(arg)
			if !ok {
				ra.skipped = append(ra.skipped, fmt.Errorf("%w, nor a folder of runs", err))
				continue
			}
			ra.dirs = append(ra.dirs, inside.dirs...)
			ra.skipped = append(ra.skipped, inside.skipped...)
			ra.left = append(ra.left, inside.left...)
		default:
			ra.skipped = append(ra.skipped, repairHint(err))
		}
	}
	return ra
}

// runsIn reads dir as a folder of runs: ok when one of its folders holds a run, even a broken
// one; its other folders are left out, named, and its files left alone (reports, pages).
func runsIn(dir string) (ra runArgs, ok bool) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return runArgs{}, false
	}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub := filepath.Join(dir, e.Name())
		_, err := runfolder.ReadHeader(sub)
		switch {
		case err == nil:
			ra.dirs = append(ra.dirs, sub)
		case errors.Is(err, runfolder.ErrNotRunFolder):
			ra.left = append(ra.left, err)
		default:
			ra.skipped = append(ra.skipped, repairHint(err))
		}
	}
	if len(ra.dirs)+len(ra.skipped) == 0 {
		return runArgs{}, false
	}
	return ra, true
}

// printRunSkips warns of each folder skipped, on w, as the command goes on with the others.
func (ra runArgs) printRunSkips(w io.Writer) {
	for _, err := range ra.left {
		printLine(w, "note: left out %v", err)
	}
	for _, err := range ra.skipped {
		printLine(w, "warning: skipped %v", err)
	}
}

// skipError is the error a command ends with when it skipped folders (exit 1), nil when none.
func (ra runArgs) skipError(verb string) error {
	if len(ra.skipped) == 0 {
		return nil
	}
	return badResult(fmt.Errorf("%s not %s; see the warnings above", english.Count(len(ra.skipped), "folder"), verb))
}

// none is the error of a command that read no run (ra skipped every folder it was given): the
// first folder's own, whose kind says the exit code (2 for no run, 1 for a broken one), the
// others warned of on w first.
func (ra runArgs) none(w io.Writer) error {
	runArgs{skipped: ra.skipped[1:], left: ra.left}.printRunSkips(w)
	return ra.skipped[0]
}
