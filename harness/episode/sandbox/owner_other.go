//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// processStart stands for a process's start time where /proc does not give it: "0" while the
// process exists (a reused pid then passes for its owner, which only keeps a leftover longer).
func processStart(pid int) (string, error) {
	p, err := os.FindProcess(pid)
	if err != nil {
		return "", err
	}
	if !processExists(p) {
		return "", errors.New("no such process")
	}
	return "0", nil
}

// cgroupParents: there are no cgroups here.
func cgroupParents() []string { return nil }
