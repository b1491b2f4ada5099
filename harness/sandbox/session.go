//go:build linux

package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aa-grade/aa-grade/internal/safefile"
)

// ending is how the processes of a sandbox end with it.
type ending int

const (
	// endWalk: aa-grade kills what it finds under the agent in /proc (best effort: a process
	// that keeps forking can outrun the walk). The none backend, and Landlock where neither
	// namespaces nor signal scoping are available.
	endWalk ending = iota
	// endNamespace: the sandbox is a pid namespace, which the kernel empties when its init
	// dies, also when aa-grade is killed (its init has a parent-death signal).
	endNamespace
	// endAgentKillsAll: the agent kills every process it may signal, which a signal-scoped
	// Landlock domain limits to the sandbox's, as soon as its input ends: at Close, and when
	// aa-grade dies (the kernel closes its end of the pipe).
	endAgentKillsAll
)

// maxAnswerBytes bounds one answer of the agent: a result holds two captures of OutputLimit
// characters, a file at most the limit asked for (4 MiB for a submission), JSON-escaped.
const maxAnswerBytes = 64 << 20

// closeGrace is how long Close waits for the agent to end everything by itself before killing it.
const closeGrace = 5 * time.Second

// session talks to the agent of a running sandbox over its stdin and stdout.
type session struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	stderr  *boundedBuffer
	workdir string
	cgroup  *sandboxCgroup // to remove at the end (nil: none)
	end     ending
	exited  chan struct{} // closed once the sandbox process has been waited for

	mu        sync.Mutex // one request at a time
	closeOnce sync.Once
}

// ErrAgentDied marks a sandbox whose agent is gone (killed, or out of memory).
var ErrAgentDied = errors.New("the sandbox agent died")

// startSession starts the sandbox process (which runs the agent) and connects to it. agent is
// the aa-grade executable, which also puts the sandbox in its cgroups when there are some.
func startSession(cmd *exec.Cmd, workdir, agent string, cgroup *sandboxCgroup, end ending) (*session, error) {
	// Nothing aa-grade inherited may cross into the sandbox.
	markInheritedCloseOnExec()
	if cgroup != nil {
		cgroup.enter(cmd, agent)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		cgroup.remove()
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		cgroup.remove()
		return nil, err
	}
	s := &session{cmd: cmd, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: &boundedBuffer{limit: 16 << 10},
		workdir: workdir, cgroup: cgroup, end: end, exited: make(chan struct{})}
	cmd.Stderr = s.stderr
	cmd.WaitDelay = time.Second // a survivor holding the agent's stderr must not hold Close
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	if end != endAgentKillsAll {
		// The sandbox dies with aa-grade; an agent that kills all instead must live on to do it.
		cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	}
	if err := cmd.Start(); err != nil {
		cgroup.remove()
		return nil, fmt.Errorf("start sandbox: %w", err)
	}
	go func() { cmd.Wait(); close(s.exited) }()
	return s, nil
}

func (s *session) Workdir() string { return s.workdir }

// Run sends one command and waits for its result. The agent enforces the timeout; a result
// that does not come a while after it (a dead or hung agent) ends the sandbox.
func (s *session) Run(ctx context.Context, command string, timeout time.Duration) (Result, error) {
	var res Result
	err := s.ask(ctx, request{Op: opRun, Cmd: command, Timeout: timeout}, timeout+30*time.Second, &res)
	return res, err
}

// ReadFile reads a regular file of the workspace, at most limit bytes. The agent opens it
// inside the sandbox, as the sandbox sees it: a link cannot lead out of the workspace, a FIFO
// or a device is refused without blocking, a larger file is refused (safefile.ErrTooLarge).
func (s *session) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	var a fileAnswer
	if err := s.ask(ctx, request{Op: opRead, Name: name, Limit: limit}, fileTimeout, &a); err != nil {
		return nil, err
	}
	if err := a.err(name); err != nil {
		return nil, err
	}
	if int64(len(a.Data)) > limit {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", name, safefile.ErrTooLarge, limit)
	}
	return a.Data, nil
}

// CheckFile says whether name is a regular file of the workspace, by ReadFile's rules.
func (s *session) CheckFile(ctx context.Context, name string) error {
	var a fileAnswer
	if err := s.ask(ctx, request{Op: opCheck, Name: name}, fileTimeout, &a); err != nil {
		return err
	}
	return a.err(name)
}

// fileTimeout bounds the answer to a file request (a read of a few MiB).
const fileTimeout = 30 * time.Second

// ask sends one request and decodes its answer into v, waiting at most wait.
func (s *session) ask(ctx context.Context, req request, wait time.Duration, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		return s.died(err)
	}
	got := make(chan error, 1)
	go func() {
		answer, err := readLine(s.stdout, maxAnswerBytes)
		if err == nil {
			err = json.Unmarshal(answer, v)
		}
		got <- err
	}()
	guard := time.NewTimer(wait)
	defer guard.Stop()
	select {
	case err := <-got:
		if err != nil {
			return s.died(err)
		}
		return nil
	case <-ctx.Done():
		s.Close()
		return ctx.Err()
	case <-guard.C:
		s.Close()
		return fmt.Errorf("%w: no answer within %s", ErrAgentDied, wait)
	}
}

// readLine reads one line of at most max bytes: an agent cannot make aa-grade hold more.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > max {
			return nil, fmt.Errorf("an answer longer than %d bytes", max)
		}
		line = append(line, chunk...)
		if err == nil {
			return line, nil
		}
		if !errors.Is(err, bufio.ErrBufferFull) {
			return nil, err
		}
	}
}

func (s *session) died(cause error) error {
	s.Close()
	if s.cgroup.outOfMemory() {
		cause = fmt.Errorf("%v; the episode reached its memory limit", cause)
	}
	msg := strings.TrimSpace(s.stderr.String())
	if msg != "" {
		return fmt.Errorf("%w (%v): %s", ErrAgentDied, cause, msg)
	}
	return fmt.Errorf("%w: %v", ErrAgentDied, cause)
}

// Close ends every process of the sandbox. With a pid namespace or a killing agent, closing
// the agent's input is enough: it ends (killing all) and the namespace dies with it. Otherwise
// aa-grade first kills what commands left running (handed to the agent, a subreaper, when
// their parents exit, even those that started a session of their own). The agent's process
// group is killed in any case once the grace is over.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		if s.end == endWalk {
			// While the agent lives, what commands left behind are its children; once it exits
			// they would be init's and out of reach.
			killDescendants(s.cmd.Process.Pid)
		}
		s.stdin.Close()
		select {
		case <-s.exited:
		case <-time.After(closeGrace):
		}
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
		s.cgroup.remove()
	})
	return nil
}

// fileAnswer is the agent's answer to a file request.
type fileAnswer struct {
	Data  []byte `json:"data,omitempty"`
	Error string `json:"error,omitempty"`
	Kind  string `json:"kind,omitempty"` // fileNotExist, fileNotRegular, fileTooLarge, fileOutside, or "" for others
}

const (
	fileNotExist   = "not_exist"
	fileNotRegular = "not_regular"
	fileTooLarge   = "too_large"
	fileOutside    = "outside"
)

// err turns the answer back into the error the agent met, with the sentinel to match on.
func (a fileAnswer) err(name string) error {
	var kind error
	switch a.Kind {
	case "":
		if a.Error == "" {
			return nil
		}
		return errors.New(a.Error)
	case fileNotExist:
		kind = fs.ErrNotExist
	case fileNotRegular:
		kind = safefile.ErrNotRegular
	case fileTooLarge:
		kind = safefile.ErrTooLarge
	case fileOutside:
		kind = ErrOutsideWorkspace
	}
	return &agentFileError{msg: a.Error, kind: kind}
}

// agentFileError is an error the agent met on a file, as it described it.
type agentFileError struct {
	msg  string
	kind error
}

func (e *agentFileError) Error() string { return e.msg }
func (e *agentFileError) Unwrap() error { return e.kind }

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
