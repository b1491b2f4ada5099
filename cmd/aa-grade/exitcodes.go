package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/data/hub"
	"github.com/aa-grade/aa-grade/grader/judge"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// The exit codes of every command.
const (
	exitOK          = 0
	exitBadResult   = 1 // the command ran, but the result is bad
	exitUsage       = 2 // the command line asks for something that cannot be done: fix it
	exitFailure     = 3 // infrastructure: the network, a disk, the sandbox, a provider
	exitInterrupted = 130
)

// The CLI's own kinds of error, for what no package sentinel says: a command marks an error
// with one (usageError, badResult) and the table below maps it.
var (
	errInterrupted = errors.New("interrupted")
	errUsage       = errors.New("usage error")
	errBadResult   = errors.New("bad result")
	errFailure     = errors.New("infrastructure failure")
)

// exitCodes maps errors to exit codes, first match wins (errors.Is); an error that matches
// none is an infrastructure failure. This is the one place an exit code is chosen.
var exitCodes = []struct {
	err  error
	code int
}{
	{errInterrupted, exitInterrupted},
	{context.Canceled, exitInterrupted},
	{errFailure, exitFailure}, // before the sentinels it may wrap
	{errUsage, exitUsage},
	{errBadResult, exitBadResult},

	// A path that holds no run where one is needed, or someone's files where a run would
	// write; a folder another run is writing; a run folder or a merge of another configuration,
	// or of runs whose judges disagree.
	{runfolder.ErrNotRunFolder, exitUsage},
	{runfolder.ErrLocked, exitUsage},
	{runner.ErrConfigChanged, exitUsage},
	{runner.ErrMergeConfig, exitUsage},
	{runner.ErrMergeInto, exitUsage},
	{judge.ErrConflict, exitUsage},
	{runfolder.ErrShard, exitUsage},
	{model.ErrModelSpec, exitUsage},
	// A spec that names no usable dataset or task.
	{data.ErrNotDataset, exitUsage},
	{data.ErrUnknownTask, exitUsage},
	{hub.ErrRepoNotFound, exitUsage},
	{hub.ErrRevisionNotFound, exitUsage},
	// An image that cannot run an episode (missing, another machine's, no bash), whichever
	// backend met it.
	{sandbox.ErrImageUnusable, exitUsage},

	{runfolder.ErrCorrupt, exitBadResult},
	// A run that stopped on a provider's refusal, or on too many episodes in error.
	{runner.ErrRefused, exitFailure},
	{runner.ErrStopped, exitFailure},
}

// kindError gives err a kind (errUsage, errBadResult, errFailure) for the table, keeping its
// message and its chain.
type kindError struct {
	err, kind error
}

func (e *kindError) Error() string   { return e.err.Error() }
func (e *kindError) Unwrap() []error { return []error{e.err, e.kind} }

// usageErrorf is a usage error (exit 2); %w in format keeps the cause's chain.
func usageErrorf(format string, args ...any) error {
	return &kindError{fmt.Errorf(format, args...), errUsage}
}

// usageError marks err as a usage error (exit 2).
func usageError(err error) error { return &kindError{err, errUsage} }

// badResult reports a command that ran to the end with a bad result (exit 1).
func badResult(err error) error { return &kindError{err, errBadResult} }

// interrupted reports a command stopped by Ctrl-C or SIGTERM (exit 130); err says how far it
// got and how to go on.
func interrupted(err error) error { return &kindError{err, errInterrupted} }

// failure reports an infrastructure failure (exit 3) whatever sentinel err wraps.
func failure(err error) error { return &kindError{err, errFailure} }

// exitCodeOf is the exit code of err by the table.
func exitCodeOf(err error) int {
	if err == nil {
		return exitOK
	}
	for _, e := range exitCodes {
		if errors.Is(err, e.err) {
			return e.code
		}
	}
	return exitFailure
}

// exitCode prints err (if any) as one line and returns its exit code. Errors quote model
// replies, file contents and task ids, so the line is sanitized; errors joined (two writes
// that failed on a full disk) are told apart with "; ", not run together.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	if msg := joinLines(strings.TrimSpace(err.Error())); msg != "" {
		printLine(stderr, "aa-grade: %s", msg)
	}
	return exitCodeOf(err)
}

// joinLines puts an error's lines on one: a line that ends with a colon goes on with what it
// introduces (a quoted reply), any other is a joined error's end, told apart by "; ".
func joinLines(msg string) string {
	lines := strings.Split(msg, "\n")
	out := lines[0]
	for _, l := range lines[1:] {
		if strings.HasSuffix(out, ":") {
			out += " " + l
		} else {
			out += "; " + l
		}
	}
	return out
}
