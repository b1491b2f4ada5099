package sandbox

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
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

	mu        sync.Mutex // one command at a time
	closeOnce sync.Once
	closeErr  error
}

// ErrAgentDied marks a sandbox whose agent is gone (killed, or out of memory).
var ErrAgentDied = errors.New("the sandbox agent died")

// startSession starts the sandbox process (which runs the agent) and connects to it.
func startSession(cmd *exec.Cmd, workdir string) (*session, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &session{cmd: cmd, stdin: stdin, dec: json.NewDecoder(stdout), stderr: &boundedBuffer{limit: 16 << 10}, workdir: workdir}
	cmd.Stderr = s.stderr
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Setpgid = true
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL // the sandbox dies with aa-grade
	if err := cmd.Start(); err != nil {
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

// Close ends the agent and kills the sandbox's whole process group.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.stdin.Close()
		if s.cmd.Process != nil {
			syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		}
		s.cmd.Wait()
	})
	return s.closeErr
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
