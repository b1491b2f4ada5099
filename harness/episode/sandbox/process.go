//go:build linux

package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
)

// ending is how the processes of a sandbox end with it.
type ending int

const (
	// endWalk: aa-grade kills what it finds under the guest in /proc (best effort: a process
	// that keeps forking can outrun the walk). The none backend, and Landlock where neither
	// namespaces nor signal scoping are available.
	endWalk ending = iota
	// endNamespace: the sandbox is a pid namespace, which the kernel empties when its init
	// dies, also when aa-grade is killed (its init has a parent-death signal).
	endNamespace
	// endGuestKillsAll: the guest kills every process it may signal, which a signal-scoped
	// Landlock domain limits to the sandbox's, as soon as its input ends: at Close, and when
	// aa-grade dies (the kernel closes its end of the pipe).
	endGuestKillsAll
)

// processPeer is a sandbox that is a process of the host (bwrap, or the guest itself).
type processPeer struct {
	cmd    *exec.Cmd
	cgroup *sandboxCgroup // to remove at the end (nil: none)
	end    ending
	exited chan struct{} // closed once the process has been waited for
}

// startSession starts the sandbox process (which runs the guest) and connects to it. guest is
// the aa-grade executable, which also puts the sandbox in its cgroups when there are some.
func startSession(
	cmd *exec.Cmd,
	workdir, guest string,
	cgroup *sandboxCgroup,
	end ending,
	relay *RelaySpec,
) (*session, error) {
	// Nothing aa-grade inherited may cross into the sandbox.
	kernel.CloseInheritedOnExec()
	if cgroup != nil {
		cgroup.enter(cmd, guest)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, errors.Join(err, cgroup.remove())
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, errors.Join(err, cgroup.remove())
	}
	p := &processPeer{cmd: cmd, cgroup: cgroup, end: end, exited: make(chan struct{})}
	stderr := &boundedBuffer{limit: 16 << 10}
	cmd.Stderr = stderr
	cmd.WaitDelay = time.Second // a survivor holding the guest's stderr must not hold Close
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if end != endGuestKillsAll {
		// The sandbox dies with aa-grade; a guest that kills all instead must live on to do it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		return nil, errors.Join(fmt.Errorf("start sandbox: %w", err), cgroup.remove())
	}
	go func() {
		// How it ended is not the session's to tell: a guest that dies says so by ending its
		// output, which the session reads.
		_ = cmd.Wait()
		close(p.exited)
	}()
	return newSession(p, stdin, stdout, stderr, workdir, relay), nil
}

// beforeClose kills what commands left running where nothing else would: while the guest
// lives they are its children (it is a subreaper), even those that started a session of
// their own; once it exits they would be init's and out of reach.
func (p *processPeer) beforeClose() {
	if p.end == endWalk {
		killDescendants(p.cmd.Process.Pid)
	}
}

// kill kills the sandbox's process group; ESRCH (none left) is what it wants.
func (p *processPeer) kill()                 { _ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL) }
func (p *processPeer) done() <-chan struct{} { return p.exited }

// cleanup removes the cgroups. One that cannot be (a process that outlived a second of
// SIGKILLs) is a dead run's leftover to the next aa-grade, which removes it and says so
// (CleanLeftovers) once this one has ended; the episode's result does not depend on it.
func (p *processPeer) cleanup()          { _ = p.cgroup.remove() }
func (p *processPeer) outOfMemory() bool { return p.cgroup.outOfMemory() }

// killDescendants kills the children of pid until none is left alive: killing one hands its
// own children to pid (a subreaper), so the next round finds them.
func killDescendants(pid int) {
	for range 50 {
		children := childrenOf(pid)
		if len(children) == 0 {
			return
		}
		for _, c := range children {
			// Each fails when there is no such group, or the child is gone already.
			_ = syscall.Kill(-c, syscall.SIGKILL) // its group, if it leads one
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// childrenOf lists the living (not zombie) children of pid, from /proc.
func childrenOf(pid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...; comm may hold spaces and parentheses.
		rest := stat[bytes.LastIndexByte(stat, ')')+1:]
		fields := strings.Fields(string(rest))
		if len(fields) >= 2 && fields[0] != "Z" && fields[1] == strconv.Itoa(pid) {
			out = append(out, child)
		}
	}
	return out
}
