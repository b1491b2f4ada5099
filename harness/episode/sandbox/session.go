package sandbox

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// jsonCharBytes is the most bytes JSON makes of one character of a string (\u00XX).
const jsonCharBytes = 6

// replySlack is room in a reply line for what is not a stream or a file: the id, the field
// names, the exit code, the lengths and duration, a short error message.
const replySlack = 4 << 10

// runAnswerBytes bounds the reply to a command: its two streams are captures of at most
// shellspec.OutputLimit characters and a notice each, every character JSON-escaped. About 245 KB: an
// guest, or a command writing in its place, cannot make aa-grade hold more for one command.
var runAnswerBytes = 2*jsonCharBytes*(shellspec.OutputLimit+utf8.RuneCountInString(longestNotice)) + replySlack

// longestNotice is the truncation notice of the longest output.
var longestNotice = shellspec.TruncationNotice(math.MaxInt64, shellspec.OutputLimit)

// answerLimit bounds the reply line to r, in bytes: what the longest honest answer needs. A
// file answer holds at most the limit asked, base64-encoded as JSON does, and an error
// message that may name the file twice.
func answerLimit(r wire.Request) int {
	if r.Op == wire.OpRun {
		return runAnswerBytes
	}
	return base64.StdEncoding.EncodedLen(int(max(r.Limit, 0))) + 2*jsonCharBytes*len(r.Name) + replySlack
}

// relayLineBytes bounds a relay frame's line: its data base64-encoded, and the envelope.
var relayLineBytes = base64.StdEncoding.EncodedLen(wire.RelayFrameBytes) + replySlack

// closeGrace is how long Close waits for the guest to end everything by itself before killing it.
const closeGrace = 5 * time.Second

// session talks to the guest of a running sandbox over its stdin and stdout, whatever runs
// it (a process of the host, a container). One goroutine reads every line the guest writes:
// the reply to the request in flight, and the relay's frames at any time.
type session struct {
	peer    peer
	stdin   io.WriteCloser
	in      *wire.LineWriter // over stdin
	stdout  *bufio.Reader
	stderr  *boundedBuffer
	workdir string
	relay   *wire.Listener // nil: no relay
	// agentDir is where commands find Spec.AgentDir ("" when none).
	agentDir string

	mu        sync.Mutex // one request at a time
	rmu       sync.Mutex // guards waiting and ended
	waiting   *awaited   // the request in flight
	ended     error      // why the guest's output ended, or the line that ended it
	closeOnce sync.Once
}

// awaited is a request waiting for its reply, which the reader decodes into v.
type awaited struct {
	req  wire.Request
	v    any
	done chan error // receives once: nil, or why no reply will come
}

// peer is what runs the guest: how to end it and know it has ended.
type peer interface {
	// beforeClose runs before the guest's input is closed (a last chance to find what the
	// guest's processes left, while they are still its children).
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

// newSession starts reading the guest's output; relay, when set, is the relay the guest offers.
func newSession(
	p peer,
	stdin io.WriteCloser,
	stdout io.Reader,
	stderr *boundedBuffer,
	workdir string,
	relay *RelaySpec,
) *session {
	s := &session{peer: p, stdin: stdin, in: wire.NewLineWriter(stdin), stdout: bufio.NewReaderSize(stdout, 64<<10),
		stderr: stderr, workdir: workdir}
	if relay != nil {
		s.relay = wire.NewListener(func(f wire.Frame) error { return s.in.WriteLine(wire.RelayLine{Relay: &f}) }, relay.Port)
	}
	go s.read()
	return s
}

// ErrGuestDied marks a sandbox whose guest is gone (killed, or out of memory).
var ErrGuestDied = errors.New("the sandbox guest died")

func (s *session) Workdir() string { return s.workdir }

// Run sends one command and waits for its result. The guest enforces the timeout; a result
// that does not come a while after it (a dead or hung guest) ends the sandbox.
func (s *session) Run(ctx context.Context, command string, timeout time.Duration) (Result, error) {
	var res Result
	if err := s.ask(ctx, wire.Request{Op: wire.OpRun, Cmd: command, Timeout: timeout}, timeout+30*time.Second,
		&res); err != nil {
		return Result{}, err
	}
	return wire.Clip(res), nil
}

// ReadFile reads a regular file of the workspace, at most limit bytes. The guest opens it
// inside the sandbox, as the sandbox sees it: a link cannot lead out of the workspace, a FIFO
// or a device is refused without blocking, a larger file is refused (safefile.ErrTooLarge).
func (s *session) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	var a wire.FileAnswer
	if err := s.ask(ctx, wire.Request{Op: wire.OpRead, Name: name, Limit: limit}, fileTimeout, &a); err != nil {
		return nil, err
	}
	if err := a.Err(); err != nil {
		return nil, err
	}
	if int64(len(a.Data)) > limit {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", name, safefile.ErrTooLarge, limit)
	}
	return a.Data, nil
}

// CheckFile says whether name is a regular file of the workspace, by ReadFile's rules.
func (s *session) CheckFile(ctx context.Context, name string) error {
	var a wire.FileAnswer
	if err := s.ask(ctx, wire.Request{Op: wire.OpCheck, Name: name}, fileTimeout, &a); err != nil {
		return err
	}
	return a.Err()
}

// fileTimeout bounds the answer to a file request (a read of a few MiB).
const fileTimeout = 30 * time.Second

// ask sends one request and decodes its answer into v, waiting at most wait. A reply that is
// not the answer to this request (see package wire) is the guest's death.
func (s *session) ask(ctx context.Context, req wire.Request, wait time.Duration, v any) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	req.ID = wire.NewID()
	w := &awaited{req: req, v: v, done: make(chan error, 1)}
	s.rmu.Lock()
	ended := s.ended
	if ended == nil {
		s.waiting = w
	}
	s.rmu.Unlock()
	if ended != nil {
		return s.died(ended)
	}
	if err := s.in.WriteLine(req); err != nil {
		return s.died(err)
	}
	guard := time.NewTimer(wait)
	defer guard.Stop()
	select {
	case err := <-w.done:
		if err != nil {
			return s.died(err)
		}
		return nil
	case <-ctx.Done():
		s.end()
		return ctx.Err()
	case <-guard.C:
		s.end()
		return fmt.Errorf("%w: no answer within %s", ErrGuestDied, wait)
	}
}

// read takes the guest's lines until its output ends or a line is one the guest would not
// write; then no reply comes any more, the relay's connections fail, and a refused line
// ends the sandbox at once. What the guest writes after that is read and dropped, so that
// its writer (docker's demultiplexer) never waits on a reader gone, and Close on it.
func (s *session) read() {
	err, refused := s.readLines()
	s.rmu.Lock()
	s.ended = err
	w := s.waiting
	s.waiting = nil
	s.rmu.Unlock()
	if w != nil {
		w.done <- err
	}
	if s.relay != nil {
		s.relay.Shut(err)
		_ = s.relay.Close() // always nil: a net.Listener's signature
	}
	if refused {
		go s.end()
	}
	_, _ = io.Copy(io.Discard, s.stdout) // ends with the output, which has said all it may
}

// readLines hands each line to the relay or the request in flight; it returns why it stopped,
// and whether for a line it refused.
func (s *session) readLines() (error, bool) {
	for {
		line, err := readLine(s.stdout, s.lineLimit)
		if err != nil {
			return err, errors.Is(err, errLongLine)
		}
		if s.relay != nil && bytes.HasPrefix(line, []byte(wire.RelayPrefix)) {
			var l wire.RelayLine
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.DisallowUnknownFields()
			err := dec.Decode(&l)
			if _, end := dec.Token(); err == nil && (l.Relay == nil || end != io.EOF) {
				err = errors.New("not one frame")
			}
			if err != nil {
				return fmt.Errorf("a relay line that is not the guest's (%w)", err), true
			}
			if err := s.relay.Receive(*l.Relay); err != nil {
				return err, true
			}
			continue
		}
		s.rmu.Lock()
		w := s.waiting
		s.rmu.Unlock()
		if w == nil {
			return errors.New("a line no request asked for (forged, or one more than the guest's answers)"), true
		}
		if err := decodeReply(line, w.req, w.v); err != nil {
			return err, true
		}
		s.rmu.Lock()
		s.waiting = nil
		s.rmu.Unlock()
		w.done <- nil
	}
}

// lineLimit bounds the guest's next line: a relay frame, or the reply to the request in
// flight.
func (s *session) lineLimit() int {
	limit := 0
	if s.relay != nil {
		limit = relayLineBytes
	}
	s.rmu.Lock()
	defer s.rmu.Unlock()
	if s.waiting != nil {
		limit = max(limit, answerLimit(s.waiting.req))
	}
	return limit
}

// decodeReply decodes the guest's reply line to req, its answer into v. The line is decoded in
// one pass, before its id is checked (a second pass over a command's output costs as much as
// the rest of the request), so v holds what a forged line said when the error says so: the
// callers drop it.
func decodeReply(line []byte, req wire.Request, v any) error {
	rep := wire.Reply{Answer: v}
	if err := json.Unmarshal(line, &rep); err != nil {
		return fmt.Errorf("a reply that is not the guest's (%w)", err)
	}
	if rep.ID != req.ID {
		return fmt.Errorf(
			"a reply with id %d to the request of id %d: a line the guest did not write for it (forged, or one more than "+
				"its answers)", rep.ID, req.ID)
	}
	return nil
}

// errLongLine marks a line longer than any the guest may write there.
var errLongLine = errors.New("a line longer than allowed")

// readLine reads one line of at most limit() bytes, asked again as the line grows (a request
// sent meanwhile allows its reply): a guest cannot make aa-grade hold more.
func readLine(r *bufio.Reader, limit func() int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if max := limit(); len(line)+len(chunk) > max {
			return nil, fmt.Errorf("%w: an answer longer than %d bytes", errLongLine, max)
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
	s.end()
	if s.peer.outOfMemory() {
		cause = fmt.Errorf("%v; the episode reached its memory limit", cause)
	}
	msg := strings.TrimSpace(s.stderr.String())
	if msg != "" {
		return fmt.Errorf("%w (%v): %s", ErrGuestDied, cause, msg)
	}
	return fmt.Errorf("%w: %v", ErrGuestDied, cause)
}

// Close ends every process of the sandbox (see end); it has no error to tell.
func (s *session) Close() error {
	s.end()
	return nil
}

// end ends every process of the sandbox. With a pid namespace or a killing guest, closing
// the guest's input is enough: it ends (killing all) and the namespace dies with it. The
// peer kills the sandbox in any case once the grace is over.
func (s *session) end() {
	s.closeOnce.Do(func() {
		s.peer.beforeClose()
		if s.relay != nil {
			_ = s.relay.Close() // always nil: a net.Listener's signature
		}
		s.stdin.Close() // also ends a line being written, should the guest not read it
		select {
		case <-s.peer.done():
		case <-time.After(closeGrace):
		}
		s.peer.kill()
		<-s.peer.done()
		s.peer.cleanup()
	})
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
