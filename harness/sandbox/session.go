package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// session talks to the agent of a running sandbox over its stdin and stdout.
type session struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	dec     *json.Decoder
	stderr  *boundedBuffer
	workdir string
	cgroup  string // the pids cgroup to remove at the end, if any

	mu        sync.Mutex // one command at a time
	closeOnce sync.Once
}

// ErrAgentDied marks a sandbox whose agent is gone (killed, or out of memory).
var ErrAgentDied = errors.New("the sandbox agent died")

// startSession starts the sandbox process (which runs the agent) and connects to it. agent is
// the aa-grade executable, which also bounds the sandbox's processes when run as root.
func startSession(cmd *exec.Cmd, workdir, agent string) (*session, error) {
	cgroup := limitProcesses(cmd, agent)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, stdin: stdin, dec: json.NewDecoder(stdout), stderr: &boundedBuffer{limit: 16 << 10}, workdir: workdir, cgroup: cgroup}
	cmd.Stderr = s.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // the sandbox dies with aa-grade
	if err := cmd.Start(); err != nil {
		if cgroup != "" {
			os.Remove(cgroup)
		}
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	return s, nil
}

func (s *session) Workdir() string { return s.workdir }

// Run sends one command and waits for its result. The agent enforces the timeout; a result
// that does not come a while after it (a dead or hung agent) ends the sandbox.
func (s *session) Run(ctx context.Context, command string, timeout time.Duration) (Result, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	line, err := json.Marshal(request{Cmd: command, Timeout: timeout})
	if err != nil {
		return Result{}, err
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		return Result{}, s.died(err)
	}
	type answer struct {
		res Result
		err error
	}
	got := make(chan answer, 1)
	go func() {
		var res Result
		err := s.dec.Decode(&res)
		got <- answer{res, err}
	}()
	guard := time.NewTimer(timeout + 30*time.Second)
	defer guard.Stop()
	select {
	case a := <-got:
		if a.err != nil {
			return Result{}, s.died(a.err)
		}
		return a.res, nil
	case <-ctx.Done():
		s.Close()
		return Result{}, ctx.Err()
	case <-guard.C:
		s.Close()
		return Result{}, fmt.Errorf("%w: no answer %s after the command's timeout", ErrAgentDied, 30*time.Second)
	}
}

func (s *session) died(cause error) error {
	s.Close()
	msg := strings.TrimSpace(s.stderr.String())
	if msg != "" {
		return fmt.Errorf("%w (%v): %s", ErrAgentDied, cause, msg)
	}
	return fmt.Errorf("%w: %v", ErrAgentDied, cause)
}

// Close kills every process of the sandbox: what commands left running (handed to the agent,
// a subreaper, when their parents exit, even those that started a session of their own), then
// the agent's process group.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		if s.cmd.Process != nil {
			// While the agent lives, what commands left behind are its children; once it exits
			// they would be init's and out of reach.
			killDescendants(s.cmd.Process.Pid)
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		s.stdin.Close()
		s.cmd.Wait()
		if s.cgroup != "" {
			for range 100 { // the cgroup can be removed once its last process is reaped
				if os.Remove(s.cgroup) == nil {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
		}
	})
	return nil
}

// killDescendants kills the children of pid until none is left alive: killing one hands its
// own children to pid (a subreaper), so the next round finds them.
func killDescendants(pid int) {
	for range 50 {
		children := childrenOf(pid)
		if len(children) == 0 {
			return
		}
		for _, c := range children {
			syscall.Kill(-c, syscall.SIGKILL) // its group, if it leads one
			syscall.Kill(c, syscall.SIGKILL)
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

// boundedBuffer keeps the first bytes written to it, for error messages.
type boundedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (b *boundedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *boundedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
