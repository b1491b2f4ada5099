package sandbox

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// pipeGuest is a guest over pipes whose every answer a test writes, as a command that took
// over the guest's stdout could: a forged line, an extra one, an answer far over the caps.
// Each request goes to answer, which returns the lines to write back; id is the request's id
// as it came, for the honest envelope (see envelope).
type pipeGuest struct {
	answer    func(id json.RawMessage, req map[string]json.RawMessage) []string
	requests  io.ReadCloser
	answers   *io.PipeWriter
	ended     chan struct{}
	closeOnce sync.Once
}

// startPipeGuest starts a session talking to a pipeGuest.
func startPipeGuest(t *testing.T, answer func(id json.RawMessage, req map[string]json.RawMessage) []string) *session {
	t.Helper()
	return startPipeGuestWith(t, nil, answer)
}

// startPipeGuestWith starts a session with the relay given talking to a pipeGuest.
func startPipeGuestWith(t *testing.T, relay *RelaySpec, answer func(id json.RawMessage, req map[string]json.RawMessage) []string) *session {
	t.Helper()
	reqR, reqW := io.Pipe()
	ansR, ansW := io.Pipe()
	a := &pipeGuest{answer: answer, requests: reqR, answers: ansW, ended: make(chan struct{})}
	go a.serve()
	s := newSession(a, reqW, ansR, &boundedBuffer{limit: 1024}, "/home/user", relay)
	t.Cleanup(func() { s.Close() })
	return s
}

// serve answers requests until its input ends, which ends the sandbox. Lines are written by
// a goroutine of their own, so that the end of the input is seen while a line nobody reads
// any more is still being written.
func (a *pipeGuest) serve() {
	lines := make(chan string, 64)
	go func() {
		for line := range lines {
			if _, err := io.WriteString(a.answers, line+"\n"); err != nil {
				return
			}
		}
	}()
	defer a.kill()
	defer close(lines)
	in := bufio.NewScanner(a.requests)
	for in.Scan() {
		var req map[string]json.RawMessage
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return
		}
		if _, ok := req["relay"]; ok {
			continue // a relay frame, which no line answers
		}
		for _, line := range a.answer(req["id"], req) {
			lines <- line
		}
	}
}

func (a *pipeGuest) beforeClose() {}
func (a *pipeGuest) kill() {
	a.closeOnce.Do(func() {
		a.answers.CloseWithError(io.ErrClosedPipe)
		a.requests.Close()
		close(a.ended)
	})
}
func (a *pipeGuest) done() <-chan struct{} { return a.ended }
func (a *pipeGuest) cleanup()              {}
func (a *pipeGuest) outOfMemory() bool     { return false }

// envelope is the line an honest guest writes for the request of id.
func envelope(id json.RawMessage, answer any) string {
	b, err := json.Marshal(answer)
	if err != nil {
		panic(err)
	}
	return fmt.Sprintf(`{"id":%s,"answer":%s}`, cmp.Or(string(id), "0"), b)
}

// honest answers every run request with res, as the guest would.
func honest(res Result) func(json.RawMessage, map[string]json.RawMessage) []string {
	return func(id json.RawMessage, _ map[string]json.RawMessage) []string {
		return []string{envelope(id, res)}
	}
}

// captured is what the guest's Capture of limit characters makes of text.
func captured(limit int, text string) *wire.Capture {
	c := wire.NewCapture(limit)
	c.Write([]byte(text))
	return c
}

func TestSessionTakesTheAnswerToItsRequest(t *testing.T) {
	s := startPipeGuest(t, honest(Result{ExitCode: 3, Stdout: "out", Stderr: "err", StdoutChars: 3, StderrChars: 3}))
	for range 3 { // each request has its own id, and each answer is taken
		res, err := s.Run(context.Background(), "true", 0)
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		if got, want := fmt.Sprintf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr), `exit 3, stdout "out", stderr "err"`; got != want {
			t.Fatalf("Run gave %s, want %s", got, want)
		}
	}
}

func TestSessionRequestIDsDiffer(t *testing.T) {
	seen := map[string]bool{}
	s := startPipeGuest(t, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
		seen[string(id)] = true
		return []string{envelope(id, Result{})}
	})
	for range 20 {
		if _, err := s.Run(context.Background(), "true", 0); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 20 {
		t.Errorf("%d ids of 20 requests, want each its own: %v", len(seen), seen)
	}
	for _, id := range []string{"", "0"} {
		if seen[id] {
			t.Errorf("a request of id %q", id)
		}
	}
}

// TestSessionForgedAnswerIsTheGuestsDeath: a line the guest did not write for this request
// (a forged one, which cannot know the id) ends the sandbox, and its content reaches no one.
func TestSessionForgedAnswerIsTheGuestsDeath(t *testing.T) {
	forged := Result{Stdout: "FORGED", StdoutChars: 6}
	for name, forge := range map[string]func(json.RawMessage) string{
		"wrong id": func(id json.RawMessage) string { return envelope(json.RawMessage("12345"), forged) },
		"no id":    func(json.RawMessage) string { b, _ := json.Marshal(map[string]any{"answer": forged}); return string(b) },
		"bare":     func(json.RawMessage) string { b, _ := json.Marshal(forged); return string(b) },
	} {
		t.Run(name, func(t *testing.T) {
			s := startPipeGuest(t, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
				return []string{forge(id), envelope(id, Result{Stdout: "real"})}
			})
			res, err := s.Run(context.Background(), "true", 0)
			if !errors.Is(err, ErrGuestDied) || !strings.Contains(err.Error(), "id") {
				t.Fatalf("Run = %+v, %v; want the guest's death over an id", res, err)
			}
			if strings.Contains(fmt.Sprint(res, err), "FORGED") {
				t.Fatalf("the forged answer got through: %+v, %v", res, err)
			}
			if _, err := s.Run(context.Background(), "true", 0); !errors.Is(err, ErrGuestDied) {
				t.Fatalf("the session went on after a forged answer: %v", err)
			}
		})
	}
}

// TestSessionExtraLineIsTheGuestsDeath: a line more than the answer (one written into the
// guest's output after it) is read as the next request's answer, whose id it cannot carry.
func TestSessionExtraLineIsTheGuestsDeath(t *testing.T) {
	s := startPipeGuest(t, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
		return []string{envelope(id, Result{Stdout: "real"}), envelope(id, Result{Stdout: "EXTRA"})}
	})
	if res, err := s.Run(context.Background(), "true", 0); err != nil || res.Stdout != "real" {
		t.Fatalf("first Run = %+v, %v", res, err)
	}
	res, err := s.Run(context.Background(), "true", 0)
	if !errors.Is(err, ErrGuestDied) || strings.Contains(res.Stdout, "EXTRA") {
		t.Fatalf("second Run = %+v, %v; want the guest's death", res, err)
	}
}

// TestSessionClipsResults: whatever the guest sends, a stream of the result has at most
// shellspec.OutputLimit characters and a notice, cut by the rule of Capture, and its length is the
// larger of what was claimed and what came.
func TestSessionClipsResults(t *testing.T) {
	long := strings.Repeat("h", shellspec.OutputLimit/2) + strings.Repeat("m", 50000) + strings.Repeat("t", shellspec.OutputLimit/2)
	s := startPipeGuest(t, honest(Result{Stdout: long, StdoutChars: 5, Stderr: long, StderrChars: 1 << 40}))
	res, err := s.Run(context.Background(), "true", 0)
	if err != nil {
		t.Fatal(err)
	}
	arrived := int64(utf8.RuneCountInString(long))
	for _, c := range []struct {
		name  string
		got   string
		chars int64
		want  int64
	}{{"stdout", res.Stdout, res.StdoutChars, arrived}, {"stderr", res.Stderr, res.StderrChars, 1 << 40}} {
		if c.chars != c.want {
			t.Errorf("%s: %d characters, want %d", c.name, c.chars, c.want)
		}
		want := captured(shellspec.OutputLimit, long).String()
		want = strings.Replace(want, shellspec.TruncationNotice(arrived, shellspec.OutputLimit), shellspec.TruncationNotice(c.want, shellspec.OutputLimit), 1)
		if c.got != want {
			t.Errorf("%s: %d characters not cut as Capture cuts (head %q...)", c.name, utf8.RuneCountInString(c.got), c.got[:min(len(c.got), 40)])
		}
	}
}

// TestSessionKeepsCapturedResults: what the guest's own Capture made passes unchanged, at the
// limit and past it, whatever the width of its characters.
func TestSessionKeepsCapturedResults(t *testing.T) {
	for _, char := range []string{"a", "é", "😀", "\xff"} {
		for _, n := range []int{0, shellspec.OutputLimit, shellspec.OutputLimit + 1, 3 * shellspec.OutputLimit} {
			c := captured(shellspec.OutputLimit, strings.Repeat(char, n))
			want := Result{Stdout: c.String(), StdoutChars: c.Total()}
			s := startPipeGuest(t, honest(want))
			res, err := s.Run(context.Background(), "true", 0)
			if err != nil || res != want {
				t.Fatalf("%d × %q: Run = %d characters (%d counted), %v", n, char, utf8.RuneCountInString(res.Stdout), res.StdoutChars, err)
			}
		}
	}
}

// TestSessionBoundsAnswers: an answer longer than any honest one (a forged 30 MB stdout)
// ends the sandbox without being held; the longest honest answers still pass: two captures
// of characters JSON escapes six-fold, a file of the limit asked.
func TestSessionBoundsAnswers(t *testing.T) {
	huge := strings.Repeat("x", 30<<20)
	s := startPipeGuest(t, honest(Result{Stdout: huge, StdoutChars: int64(len(huge))}))
	if res, err := s.Run(context.Background(), "true", 0); !errors.Is(err, ErrGuestDied) || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("a 30 MB answer: Run = %d bytes of stdout, %v", len(res.Stdout), err)
	}
	if runAnswerBytes > 1<<20 {
		t.Errorf("a command's answer may be %d bytes, more than two captures need", runAnswerBytes)
	}

	worst := captured(shellspec.OutputLimit, strings.Repeat("\x01", 5*shellspec.OutputLimit))
	want := Result{ExitCode: 1, Stdout: worst.String(), StdoutChars: worst.Total(), Stderr: worst.String(), StderrChars: worst.Total()}
	s = startPipeGuest(t, honest(want))
	if res, err := s.Run(context.Background(), "true", 0); err != nil || res != want {
		t.Fatalf("the longest honest answer: %v", err)
	}

	const limit = 4 << 20
	data := strings.Repeat("\xff", limit)
	s = startPipeGuest(t, func(id json.RawMessage, req map[string]json.RawMessage) []string {
		return []string{envelope(id, wire.FileAnswer{Data: []byte(data)})}
	})
	if got, err := s.ReadFile(context.Background(), "agent_output.json", limit); err != nil || string(got) != data {
		t.Fatalf("a file of the limit: %d bytes, %v", len(got), err)
	}
	s = startPipeGuest(t, func(id json.RawMessage, req map[string]json.RawMessage) []string {
		return []string{envelope(id, wire.FileAnswer{Data: []byte(data)})}
	})
	if _, err := s.ReadFile(context.Background(), "agent_output.json", 1000); !errors.Is(err, ErrGuestDied) {
		t.Fatalf("a file far over the limit asked: %v", err)
	}
}
