package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutPath refuses an output path (--flag) that cannot be created because a file is in
// its way, the path itself or a parent of it, as a usage error naming the flag, before
// anything is done.
func checkOutPath(flag, path string) error {
	clean := filepath.Clean(path)
	var first error // why path itself cannot be looked at
	for p := clean; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		switch {
		case err == nil && !info.IsDir() && p == clean:
			return usageErrorf("--%s %s: it is a file, not a folder", flag, path)
		case err == nil && !info.IsDir():
			return usageErrorf("--%s %s: %s is a file, not a folder", flag, path, p)
		case err == nil && first != nil && !errors.Is(first, fs.ErrNotExist):
			return fmt.Errorf("--%s: %w", flag, first)
		case err == nil:
			return nil
		}
		if first == nil {
			first = err
		}
		if p == filepath.Dir(p) {
			return nil
		}
	}
}

// checkNewFolder refuses an output folder (--flag) that must be new but holds files already.
func checkNewFolder(flag, path string) error {
	if err := checkOutPath(flag, path); err != nil {
		return err
	}
	entries, err := os.ReadDir(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("--%s: %w", flag, err)
	case len(entries) > 0:
		return usageErrorf("--%s %s: the folder is not empty; name a new or an empty folder", flag, path)
	}
	return nil
}

// printSkipped warns of the lines of a run folder's results.jsonl that were skipped, each
// naming the file and the line.
func printSkipped(w io.Writer, warnings []string) {
	for _, msg := range warnings {
		printLine(w, "warning: %s", msg)
	}
}
