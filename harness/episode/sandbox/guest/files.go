//go:build linux

package guest

import (
	"os"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// readFile reads a regular file of the workspace for aa-grade (the submission).
func readFile(workspace *os.Root, name string, limit int64) wire.FileAnswer {
	b, err := safefile.Read(workspace, name, limit)
	if err != nil {
		return wire.FileError(err)
	}
	return wire.FileAnswer{Data: b}
}

// checkFile says whether name is a regular file of the workspace (a path the model hands back).
func checkFile(workspace *os.Root, name string) wire.FileAnswer {
	f, err := safefile.Open(workspace, name)
	if err != nil {
		return wire.FileError(err)
	}
	_ = f.Close() // read only, and not read: opening it was the check
	return wire.FileAnswer{}
}
