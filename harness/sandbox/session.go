package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/shellspec"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// jsonCharBytes is the most bytes JSON makes of one character of a string (\u00XX).
const jsonCharBytes = 6

// replySlack is room in a reply line for what is not a stream or a file: the id, the field
// names, the exit code, the lengths and duration, a short error message.
const replySlack = 4 << 10

// runAnswerBytes bounds the reply to a command: its two streams are captures of at most
// shellspec.OutputLimit characters and a notice each, every character JSON-escaped. About 245 KB: an
// agent, or a command writing in its place, cannot make aa-grade hold more for one command.
var runAnswerBytes = 2*jsonCharBytes*(shellspec.OutputLimit+utf8.RuneCountInString(shellspec.TruncationNotice(math.MaxInt64, shellspec.OutputLimit))) + replySlack

// answerLimit bounds the reply line to r, in bytes: what the longest honest answer needs. A
// file answer holds at most the limit asked, base64-encoded as JSON does, and an error
// message that may name the file twice.
func (r request) answerLimit() int {
	if r.Op == opRun {
		return runAnswerBytes
	}
	return base64.StdEncoding.EncodedLen(int(max(r.Limit, 0))) + 2*jsonCharBytes*len(r.Name) + replySlack
}

// closeGrace is how long Close waits for the agent to end everything by itself before killing it.
const closeGrace = 5 * time.Second

// session talks to the agent of a running sandbox over its stdin and stdout, whatever runs
// it (a process of the host, a container).
type session struct {
	peer    peer
	stdin   io.WriteCloser
	stdout  *bufio.Reader
	stderr  *boundedBuffer
	workdir string

	mu        sync.Mutex // one request at a time
	closeOnce sync.Once
}

// peer is what runs the agent: how to end it and know it has ended.
type peer interface {
	// beforeClose runs before the agent's input is closed (a last chance to find what the
	// agent's processes left, while they are still its children).
	beforeClose()
	// kill ends every process of the sandbox at once.
	kill()
	// done is closed once the sandbox has ended.
	done() <-chan struct{}
	// cleanup removes what the sandbox left on the host (cgroups, a container).
	cleanup()
	// outOfMemory says the sandbox reached its memory limit.
	outOfMemory() bool
}

func newSession(p peer, stdin io.WriteCloser, stdout io.Reader, stderr *boundedBuffer, workdir string) *session {
	return &session{peer: p, stdin: stdin, stdout: bufio.NewReaderSize(stdout, 64<<10), stderr: stderr, workdir: workdir}
}

// ErrAgentDied marks a sandbox whose agent is gone (killed, or out of memory).
var ErrAgentDied = errors.New("the sandbox agent died")

func (s *session) Workdir() string { return s.workdir }

// Run sends one command and waits for its result. The agent enforces the timeout; a result
// that does not come a while after it (a dead or hung agent) ends the sandbox.
func (s *session) Run(ctx context.Context, command string, timeout time.Duration) (Result, error) {
	var res Result
	if err := s.ask(ctx, request{Op: opRun, Cmd: command, Timeout: timeout}, timeout+30*time.Second, &res); err != nil {
		return Result{}, err
	}
	return clipResult(res), nil
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

// ask sends one request and decodes its answer into v, waiting at most wait. A reply that is
// not the answer to this request (see protocol.go) is the agent's death.
func (s *session) ask(ctx context.Context, req request, wait time.Duration, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.ID = newRequestID()
	line, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if _, err := s.stdin.Write(append(line, '\n')); err != nil {
		return s.died(err)
	}
	got := make(chan error, 1)
	go func() { got <- readReply(s.stdout, req, v) }()
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

// newRequestID draws a request's id: 64 random bits, which a command writing into the
// agent's output cannot guess; never 0, the id of a reply that has none.
func newRequestID() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // crypto/rand: never fails
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}

// readReply reads the agent's reply to req, one line of at most req.answerLimit() bytes, and
// decodes its answer into v. The line is decoded in one pass, before its id is checked (a
// second pass over a command's output costs as much as the rest of the request), so v holds
// what a forged line said when the error says so: the callers drop it.
func readReply(r *bufio.Reader, req request, v any) error {
	line, err := readLine(r, req.answerLimit())
	if err != nil {
		return err
	}
	rep := reply{Answer: v}
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("a reply that is not the agent's (%w)", err)
	}
	if rep.ID != req.ID {
		return fmt.Errorf("a reply with id %d to the request of id %d: a line the agent did not write for it (forged, or one more than its answers)", rep.ID, req.ID)
	}
	return nil
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
	if s.peer.outOfMemory() {
		cause = fmt.Errorf("%v; the episode reached its memory limit", cause)
	}
	msg := strings.TrimSpace(s.stderr.String())
	if msg != "" {
		return fmt.Errorf("%w (%v): %s", ErrAgentDied, cause, msg)
	}
	return fmt.Errorf("%w: %v", ErrAgentDied, cause)
}

// Close ends every process of the sandbox. With a pid namespace or a killing agent, closing
// the agent's input is enough: it ends (killing all) and the namespace dies with it. The
// peer kills the sandbox in any case once the grace is over.
func (s *session) Close() error {
	s.closeOnce.Do(func() {
		s.peer.beforeClose()
		s.stdin.Close()
		select {
		case <-s.peer.done():
		case <-time.After(closeGrace):
		}
		s.peer.kill()
		<-s.peer.done()
		s.peer.cleanup()
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
