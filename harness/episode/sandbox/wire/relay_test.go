package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testPort names the relay in the tests over pipes, where nothing listens.
const testPort = 4000

// relayPair is both sides of a relay joined by pipes, as the guest and aa-grade are, with
// the guest's side taking no more connections than its slots.
func relayPair(t testing.TB) (guest *Mux, host *Listener) {
	t.Helper()
	toHostR, toHostW := io.Pipe()
	toGuestR, toGuestW := io.Pipe()
	toHost, toGuest := &LineWriter{w: toHostW}, &LineWriter{w: toGuestW}
	guest = NewOpener(func(f Frame) error { return toHost.WriteLine(RelayLine{&f}) }, testPort, func() {})
	host = NewListener(func(f Frame) error { return toGuest.WriteLine(RelayLine{&f}) }, testPort)
	var pumps sync.WaitGroup
	pump := func(r io.Reader, m *Mux) {
		dec := json.NewDecoder(r)
		for {
			var l RelayLine
			if err := dec.Decode(&l); err != nil {
				m.Shut(err)
				return
			}
			if err := m.Receive(*l.Relay); err != nil {
				t.Errorf("an honest frame refused: %v", err)
				m.Shut(err)
				return
			}
		}
	}
	pumps.Go(func() { pump(toHostR, host.mux) })
	pumps.Go(func() { pump(toGuestR, guest) })
	t.Cleanup(func() {
		toHostW.Close()
		toGuestW.Close()
		pumps.Wait()
	})
	return guest, host
}

// relayConnection is one connection over a relayPair: in, the guest's end, opened, and out,
// the host's, accepted.
func relayConnection(t *testing.T) (guest *Mux, host *Listener, in, out *Conn) {
	t.Helper()
	guest, host = relayPair(t)
	in, err := guest.Open()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := host.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return guest, host, in, conn.(*Conn)
}

// TestRelayFlowControl: a side that does not read holds exactly one window of a connection,
// and its writer waits there; reading lets the rest through, whole and in order.
func TestRelayFlowControl(t *testing.T) {
	_, _, in, out := relayConnection(t)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	var written atomic.Int64
	go func() {
		for p := payload; len(p) > 0; p = p[RelayFrameBytes/2:] {
			n, err := in.Write(p[:RelayFrameBytes/2])
			written.Add(int64(n))
			if err != nil {
				t.Error(err)
				return
			}
		}
		in.CloseWrite()
	}()
	for buffered(out) < RelayWindow { // the writer stops there, or the test times out
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // what more the writer would have sent
	if n, w := buffered(out), written.Load(); n != RelayWindow || w != RelayWindow {
		t.Fatalf("buffered %d, written %d before any read; want the window, %d", n, w, RelayWindow)
	}
	got, err := io.ReadAll(out)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes (equal: %v), %v", len(got), bytes.Equal(got, payload), err)
	}
}

func buffered(c *Conn) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.inBytes
}

// TestRelayConnections: many connections at once carry data both ways, whole; half-closes
// and closes pass; deadlines end a wait; the channel's end fails reads and writes.
func TestRelayConnections(t *testing.T) {
	guest, host := relayPair(t)
	go func() { // the host echoes what comes, then half-closes
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			go func() {
				io.Copy(c, c)
				c.(*Conn).CloseWrite()
			}()
		}
	}()
	var wg sync.WaitGroup
	for i := range RelayMaxConns {
		wg.Go(func() {
			c, err := guest.Open()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			payload := bytes.Repeat([]byte{byte(i)}, RelayWindow+RelayWindow/4+i) // past a window: credit must come back
			go func() {
				c.Write(payload)
				c.CloseWrite()
			}()
			got, err := io.ReadAll(c)
			if err != nil || !bytes.Equal(got, payload) {
				t.Errorf("connection %d: %d bytes back, %v", i, len(got), err)
			}
		})
	}
	wg.Wait()

	c, err := guest.Open()
	if err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(-time.Second))
	if _, err := c.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("a read past its deadline: %v", err)
	}
	var ne net.Error
	if _, err := c.Read(make([]byte, 1)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("a deadline's error is no timeout: %v", err)
	}
	c.SetReadDeadline(time.Time{})
	read := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		read <- err
	}()
	guest.Shut(io.ErrUnexpectedEOF) // as when aa-grade's end of the channel is gone
	if err := <-read; err == nil || !strings.Contains(err.Error(), "relay ended") {
		t.Fatalf("a read when the channel ended: %v", err)
	}
	if _, err := c.Write([]byte("x")); err == nil {
		t.Fatal("a write after the channel ended worked")
	}
}

// TestRelayCloseDeliversWhatWasSent: a side that writes and closes at once (a server's
// answer, then Close) has every byte delivered before the end; the other side's writes then
// fail, and both forget the connection.
func TestRelayCloseDeliversWhatWasSent(t *testing.T) {
	guest, host, in, conn := relayConnection(t)
	payload := bytes.Repeat([]byte("answer "), 100000)
	go func() {
		conn.Write(payload)
		conn.Close()
	}()
	got, err := io.ReadAll(in)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d of %d bytes, %v", len(got), len(payload), err)
	}
	if _, err := in.Write([]byte("late")); !errors.Is(err, errRelayReset) {
		t.Fatalf("a write after the other side closed: %v", err)
	}
	in.Close()
	for open(guest) > 0 || open(host.mux) > 0 {
		time.Sleep(time.Millisecond) // the closes cross; the test times out if never
	}
	if _, err := conn.Read(make([]byte, 1)); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("a read after Close: %v", err)
	}
}

func open(m *Mux) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}
