//go:build unix && !linux

package sandbox

import (
	"os"
	"syscall"
)

// processExists asks with signal 0, which only checks that the process is there.
func processExists(p *os.Process) bool { return p.Signal(syscall.Signal(0)) == nil }
