// Package benchproc times a command run as a process of its own and reads its peak memory,
// for the whole-command benchmarks of `make bench`.
package benchproc

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// Sample is one measured run.
type Sample struct {
	Wall    time.Duration
	CPU     time.Duration // user + system
	PeakKiB int64         // peak resident memory
}

// Run starts cmd, waits for it and measures it. The rusage of a child started by Go counts
// the parent's memory (the child shares it until exec), so the peak is read from the child's
// own VmHWM, polled every 5 ms.
func Run(cmd *exec.Cmd) (Sample, error) {
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Sample{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var s Sample
	for {
		select {
		case err := <-done:
			s.Wall = time.Since(start)
			s.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
			if err != nil {
				return s, fmt.Errorf("%s: %w", cmd.Path, err)
			}
			return s, nil
		case <-time.After(5 * time.Millisecond):
			s.PeakKiB = max(s.PeakKiB, vmHWM(cmd.Process.Pid))
		}
	}
}

// vmHWM is a process's peak resident memory in KiB, or 0 once it has gone.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return n
		}
	}
	return 0
}
