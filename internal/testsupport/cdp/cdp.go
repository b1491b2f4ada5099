// Package cdp drives headless Chromium through the DevTools protocol for browser tests. It
// talks over the pipe Chromium opens with --remote-debugging-pipe (it reads commands on file
// descriptor 3 and writes answers and events on 4, each message JSON ended by a NUL byte), so
// it needs neither a WebSocket client nor a free port, and nothing beyond the standard
// library: the handful of commands a test sends do not justify a DevTools dependency.
package cdp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Browser is one Chromium process.
type Browser struct {
	cmd  *exec.Cmd
	out  *os.File // to Chromium's fd 3
	done chan struct{}

	mu      sync.Mutex
	next    int
	pending map[int]chan message
	events  []Event
	waiters []chan struct{}
	err     error // why the pipe closed
}

// Event is something the browser reported: a console message, a request, a page load.
type Event struct {
	Method    string
	Params    json.RawMessage
	SessionID string
}

// message is what the browser sends: an answer (with the command's id) or an event.
type message struct {
	ID        int             `json:"id"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct{ Message string }
	SessionID string `json:"sessionId"`
}

// Launch starts Chromium at path, headless, with the pipe and args added to its own flags.
func Launch(path string, args ...string) (*Browser, error) {
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	fromChrome, theirEnd, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, append([]string{"--headless", "--remote-debugging-pipe"}, args...)...)
	cmd.ExtraFiles = []*os.File{toChrome, theirEnd} // fds 3 and 4
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start chromium: %w", err)
	}
	// The browser's ends, which it holds now: a pipe has nothing to flush.
	_ = toChrome.Close()
	_ = theirEnd.Close()
	b := &Browser{cmd: cmd, out: ourEnd, done: make(chan struct{}), pending: map[int]chan message{}}
	go b.read(fromChrome)
	return b, nil
}

func (b *Browser) read(in io.ReadCloser) {
	defer in.Close()
	r := bufio.NewReaderSize(in, 1<<20)
	var err error
	for {
		var line []byte
		line, err = r.ReadBytes(0)
		if err != nil {
			break
		}
		var m message
		if json.Unmarshal(line[:len(line)-1], &m) != nil {
			continue
		}
		b.mu.Lock()
		if m.ID != 0 {
			if ch, ok := b.pending[m.ID]; ok {
				delete(b.pending, m.ID)
				ch <- m
			}
		} else {
			b.events = append(b.events, Event{m.Method, m.Params, m.SessionID})
			for _, w := range b.waiters {
				close(w)
			}
			b.waiters = nil
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.err = fmt.Errorf("the browser closed its pipe: %w", err)
	b.mu.Unlock()
	close(b.done)
}

// Call sends a command (to a page when session is set) and decodes its result into result
// (when not nil).
func (b *Browser) Call(ctx context.Context, session, method string, params, result any) error {
	raw, err := json.Marshal(params)
	if err != nil {
		return err
	}
	if params == nil {
		raw = []byte("{}")
	}
	ch := make(chan message, 1)
	b.mu.Lock()
	b.next++
	id := b.next
	b.pending[id] = ch
	b.mu.Unlock()
	msg, _ := json.Marshal(struct {
		ID        int             `json:"id"`
		Method    string          `json:"method"`
		Params    json.RawMessage `json:"params"`
		SessionID string          `json:"sessionId,omitempty"`
	}{id, method, raw, session})
	if _, err := b.out.Write(append(msg, 0)); err != nil {
		return fmt.Errorf("%s: %w", method, err)
	}
	select {
	case m := <-ch:
		if m.Error != nil {
			return fmt.Errorf("%s: %s", method, m.Error.Message)
		}
		if result != nil {
			return json.Unmarshal(m.Result, result)
		}
		return nil
	case <-b.done:
		return fmt.Errorf("%s: %w", method, b.err)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", method, ctx.Err())
	}
}

// Events returns the events received since the from-th, and the count so far (the next from).
func (b *Browser) Events(from int) ([]Event, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Event(nil), b.events[from:]...), len(b.events)
}

// WaitEvent waits for an event after the from-th that match accepts, and returns its index.
func (b *Browser) WaitEvent(ctx context.Context, from int, match func(Event) bool) (int, error) {
	for {
		b.mu.Lock()
		for i := from; i < len(b.events); i++ {
			if match(b.events[i]) {
				b.mu.Unlock()
				return i, nil
			}
		}
		from = len(b.events)
		w := make(chan struct{})
		b.waiters = append(b.waiters, w)
		b.mu.Unlock()
		select {
		case <-w:
		case <-b.done:
			return 0, b.err
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// Close ends the browser: it is asked to close, so that its helper processes end with it,
// and killed if it has not within 10 seconds.
func (b *Browser) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = b.Call(ctx, "", "Browser.close", nil, nil) // the answer may not come: the pipe closes
	exited := make(chan struct{})
	go func() {
		_ = b.cmd.Wait() // how it ended tells nothing: the test has its answers
		close(exited)
	}()
	select {
	case <-exited:
	case <-ctx.Done():
		_ = b.cmd.Process.Kill() // fails only when it has just exited
		<-exited
	}
	_ = b.out.Close() // a pipe: nothing to flush
	<-b.done
	return nil
}

// Chromium finds the browser for a browser test; without it the test skips, except under CI
// (CI set), where the browser must be there.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("chromium is not installed (apt-get install chromium)")
	}
	t.Skip("chromium is not installed (apt-get install chromium): the browser tests are skipped")
	return ""
}
