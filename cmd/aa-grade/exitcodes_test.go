package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// TestExitCodeTable: a package's sentinel decides however deep it is wrapped, a command's
// own mark wins over the sentinels it wraps, and anything else is an infrastructure failure.
func TestExitCodeTable(t *testing.T) {
	for _, c := range []struct {
		err  error
		code int
	}{
		{nil, 0},
		{errors.New("connection refused"), 3},
		{fmt.Errorf("open x: %w", fs.ErrNotExist), 3}, // a missing file mid-run is no usage error
		{fmt.Errorf("run: %w", runfolder.ErrLocked), 2},
		{fmt.Errorf("a: %w", fmt.Errorf("b: %w", data.ErrUnknownTask)), 2},
		{fmt.Errorf("merge: %w", runner.ErrMergeInto), 2},
		{fmt.Errorf("read: %w", runfolder.ErrCorrupt), 1},
		{fmt.Errorf("%w; fix the cause", runner.ErrStopped), 3},
		{fmt.Errorf("Scenario-2 repeat 1: %w: HTTP 429: quota", runner.ErrRefused), 3},
		{usageErrorf("--out: %w", runfolder.ErrCorrupt), 2},
		{badResult(fmt.Errorf("x: %w", data.ErrNotDataset)), 1},
		{failure(fmt.Errorf("judge: %w", data.ErrNotDataset)), 3},
		{interrupted(errors.New("interrupted; run again")), 130},
		{fmt.Errorf("episode: %w", context.Canceled), 130},
	} {
		if got := exitCodeOf(c.err); got != c.code {
			t.Errorf("%v: exit %d, want %d", c.err, got, c.code)
		}
	}
	if err := usageErrorf("--x: %w", fs.ErrPermission); !errors.Is(err, fs.ErrPermission) || err.Error() != "--x: permission denied" {
		t.Errorf("the mark must keep the message and the chain: %q", err)
	}
}

// TestJoinedErrorsToldApart: two errors joined (two writes that met a full disk) print as one
// line, the two told apart, with the exit code of a full disk.
func TestJoinedErrorsToldApart(t *testing.T) {
	full := func(path string) error {
		return &fs.PathError{Op: "write", Path: path, Err: syscall.ENOSPC}
	}
	var stderr strings.Builder
	code := exitCode(errors.Join(full("results.jsonl"), full("spend.jsonl")), &stderr)
	want := "aa-grade: write results.jsonl: no space left on device; write spend.jsonl: no space left on device\n"
	if stderr.String() != want {
		t.Errorf("%q, want %q", stderr.String(), want)
	}
	if code != exitCodeOf(full("x")) {
		t.Errorf("exit %d, want a full disk's %d", code, exitCodeOf(full("x")))
	}
}
