package sandbox

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// AgentCommand is the hidden aa-grade command that runs the agent inside a sandbox.
const AgentCommand = "__sandbox-agent"

// request is one command sent to the agent, one JSON object a line.
type request struct {
	Cmd     string        `json:"cmd"`
	Timeout time.Duration `json:"timeout"`
}

// Limits the agent sets on itself, and so on every command: a fork bomb, a runaway process
// or a disk-filling loop stop at these.
var agentLimits = []struct {
	resource int
	value    uint64
}{
	{unix.RLIMIT_NPROC, 512},
	{unix.RLIMIT_AS, 8 << 30},
	{unix.RLIMIT_FSIZE, 2 << 30},
	{unix.RLIMIT_CORE, 0},
}

// drainGrace is how long output is still read after a command's process group is gone:
// enough for data in flight, not for a process that left the group and keeps the pipe open.
const drainGrace = 100 * time.Millisecond

// RunAgent serves commands from in until it closes, answering each on out. It runs inside the
// sandbox, in the workspace.
func RunAgent(in io.Reader, out io.Writer) error {
	if err := applyPolicy(); err != nil {
		return err
	}
	for _, l := range agentLimits {
		lim := unix.Rlimit{Cur: l.value, Max: l.value}
		_ = unix.Setrlimit(l.resource, &lim) // best effort: a lower hard limit stays
	}
	// Orphans of a command (its background jobs) become the agent's children, so that it can
	// reap them once killed instead of leaving zombies behind.
	_ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
	dec := json.NewDecoder(in)
	enc := json.NewEncoder(out)
	for {
		var req request
		if err := dec.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if err := enc.Encode(runCommand(req.Cmd, req.Timeout)); err != nil {
			return err
		}
	}
}

// runCommand runs `bash -c cmd` in a new process group and kills the whole group when it ends
// or times out, so background jobs die with their command.
func runCommand(cmd string, timeout time.Duration) Result {
	start := time.Now()
	stdout, stderr := NewCapture(OutputLimit), NewCapture(OutputLimit)
	res := Result{ExitCode: -1}
	outR, outW, err := os.Pipe()
	if err != nil {
		res.Stderr = err.Error()
		return res
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		res.Stderr = err.Error()
		return res
	}
	c := exec.Command("bash", "-c", cmd)
	c.Stdout, c.Stderr = outW, errW
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = c.Start()
	outW.Close()
	errW.Close()
	var readers sync.WaitGroup
	for _, p := range []struct {
		r *os.File
		w io.Writer
	}{{outR, stdout}, {errR, stderr}} {
		readers.Go(func() { io.Copy(p.w, p.r) })
	}
	if err != nil {
		outR.Close()
		errR.Close()
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
		syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		err = <-done
		res.TimedOut = true
	}
	syscall.Kill(-c.Process.Pid, syscall.SIGKILL) // what the command left running in its group
	reapGroup(c.Process.Pid)
	drained := make(chan struct{})
	go func() { readers.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		// Something that left the group holds the pipes: stop reading.
		outR.Close()
		errR.Close()
		<-drained
	}
	outR.Close()
	errR.Close()
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

// reapGroup collects the killed members of a process group that were handed to the agent,
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
