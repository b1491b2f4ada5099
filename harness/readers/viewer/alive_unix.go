//go:build unix

package viewer

import (
	"errors"
	"syscall"
)

// processAlive reports whether a process with this pid exists on this machine (signal 0
// checks without signalling; EPERM means it exists but belongs to someone else).
func processAlive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
}
