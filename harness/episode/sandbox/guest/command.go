//go:build linux

package guest

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// drainGrace is how long output is still read after a command's process group is gone:
// enough for data in flight, not for a process that left the group and keeps the pipe open.
const drainGrace = 100 * time.Millisecond

// runCommand runs `bash -c cmd` in a new process group and kills the whole group when it ends,
// times out or the guest's input ends, so background jobs die with their command.
func runCommand(cmd string, timeout time.Duration, inputEnded <-chan struct{}, guard *oomGuard) wire.Result {
	start := time.Now()
	stdout, stderr := wire.NewCapture(shellspec.OutputLimit), wire.NewCapture(shellspec.OutputLimit)
	res := wire.Result{ExitCode: -1}
	outR, outW, err := os.Pipe()
	if err != nil {
		res.Stderr = err.Error()
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		closePipes(outR, outW)
		res.Stderr = err.Error()
		return res
	}
	c := exec.Command("bash", "-c", cmd)
	c.Stdout, c.Stderr = outW, errW
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = guard.start(c.Start)
	closePipes(outW, errW) // the command holds its own

	var readers sync.WaitGroup
	for _, p := range []struct {
		r *os.File
		w io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		// A Capture's Write never fails; the read ends with the command's output, or with
		// the pipe closed under it (below).
		readers.Go(func() { _, _ = io.Copy(p.w, p.r) })
	}
	if err != nil {
		closePipes(outR, errR)
		readers.Wait()
		res.Stderr = err.Error()
		return res
	}
	done := make(chan error, 1)
	go func() { done <- c.Wait() }()
	timer := time.NewTimer(timeout)
	select {
	case err = <-done:
		timer.Stop()
	case <-timer.C:
		killGroup(c.Process.Pid)
		err = <-done
		res.TimedOut = true
	case <-inputEnded:
		killGroup(c.Process.Pid)
		err = <-done
	}
	killGroup(c.Process.Pid) // what the command left running in its group
	reapGroup(c.Process.Pid)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		// Something that left the group holds the pipes: stop reading.
		closePipes(outR, errR)
		<-drained
	}
	closePipes(outR, errR)
	if !res.TimedOut {
		res.ExitCode = exitCode(err)
	}
	res.Stdout, res.StdoutChars = stdout.String(), stdout.Total()
	res.Stderr, res.StderrChars = stderr.String(), stderr.Total()
	res.Duration = time.Since(start)
	return res
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// closePipes closes pipe ends: a pipe has nothing to flush, and the one error left is for an
// end closed already (a read end closed early to stop the reading).
func closePipes(ends ...*os.File) {
	for _, f := range ends {
		_ = f.Close()
	}
}

// killGroup kills the process group pgid; ESRCH (no member left) is what it wants.
func killGroup(pgid int) { _ = syscall.Kill(-pgid, syscall.SIGKILL) }

// reapGroup collects the killed members of a process group that were handed to the guest,
// waiting a little for the kill to land.
func reapGroup(pgid int) {
	deadline := time.Now().Add(drainGrace)
	for {
		var ws unix.WaitStatus
		pid, err := unix.Wait4(-pgid, &ws, unix.WNOHANG, nil)
		switch {
		case err != nil: // ECHILD: no member left to reap
			return
		case pid == 0:
			if time.Now().After(deadline) {
				return
			}
			time.Sleep(time.Millisecond)
		}
	}
}
