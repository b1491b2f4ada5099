package main

import (
	"errors"
	"io"

	"github.com/aa-grade/aa-grade/harness/runfolder"
)

// runFolderError gives a failure to open or read a run folder the same exit code in every
// command: a path that holds no run where one is needed (or someone's files where a run would
// write), or a folder another run is writing, is a usage error (2: name another folder); a
// run folder whose run.json is broken is a bad result (1); anything else, a disk error, is an
// infrastructure failure (3).
func runFolderError(err error) error {
	switch {
	case errors.Is(err, runfolder.ErrNotRunFolder), errors.Is(err, runfolder.ErrLocked):
		return &exitError{code: 2, err: err}
	case errors.Is(err, runfolder.ErrCorrupt):
		return badResult(err)
	}
	return err
}

// printSkipped warns of the lines of a run folder's results.jsonl that were skipped, each
// naming the file and the line.
func printSkipped(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		printLine(w, "warning: %s", msg)
	}
}
