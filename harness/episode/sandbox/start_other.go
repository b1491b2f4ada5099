//go:build !linux && !darwin && !windows

package sandbox

import (
	"errors"
	"os"
	"syscall"
)

// processStart stands for a process's start time where nothing gives it: "0" while the
// process exists (a reused pid then passes for its owner, which only keeps a leftover longer).
func processStart(pid int) (string, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return "", err
	}
	if p.Signal(syscall.Signal(0)) != nil {
		return "", errors.New("no such process")
	}
	return "0", nil
}
