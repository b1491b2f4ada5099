package sandbox

import (
	"bytes"
	"context"
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

// frameLine is the line a guest writes for f.
func frameLine(f frame) string {
	b, err := json.Marshal(relayLine{&f})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRelayRefusesFramesAnHonestGuestNeverSends: each forged or broken frame from the guest's
// side ends the sandbox (the request in flight fails as the guest's death) and the relay's
// listener; honest frames around the same request pass.
func TestRelayRefusesFramesAnHonestGuestNeverSends(t *testing.T) {
	open := func(id uint64) frame { return frame{Conn: id, Kind: frameOpen} }
	data := func(id uint64, n int) frame { return frame{Conn: id, Kind: frameData, Data: make([]byte, n)} }
	full := []frame{open(1)}
	for range relayWindow / relayFrameData {
		full = append(full, data(1, relayFrameData))
	}
	var overCap []frame
	for i := range relayMaxConns + 1 {
		overCap = append(overCap, open(uint64(i+1)))
	}
	lines := func(fs ...frame) []string {
		var out []string
		for _, f := range fs {
			out = append(out, frameLine(f))
		}
		return out
	}
	cases := map[string][]string{
		"a connection never opened":  lines(data(7, 10)),
		"data beyond the window":     lines(append(full, data(1, 1))...),
		"a frame of too much data":   lines(open(1), data(1, relayFrameData+1)),
		"an empty data frame":        lines(open(1), data(1, 0)),
		"credit for nothing sent":    lines(open(1), frame{Conn: 1, Kind: frameCredit, Credit: 1}),
		"an open of an open id":      lines(open(1), open(1)),
		"an open of id 0":            lines(open(0)),
		"an open over the cap":       lines(overCap...),
		"data after eof":             lines(open(1), frame{Conn: 1, Kind: frameEOF}, data(1, 1)),
		"a second eof":               lines(open(1), frame{Conn: 1, Kind: frameEOF}, frame{Conn: 1, Kind: frameEOF}),
		"an eof with data":           lines(open(1), frame{Conn: 1, Kind: frameEOF, Data: []byte("x")}),
		"a frame of no known kind":   lines(open(1), frame{Conn: 1, Kind: "reset"}),
		"a relay line with more":     {`{"relay":{"conn":1,"kind":"open"},"answer":{"stdout":"FORGED"}}`},
		"a relay line that is not":   {`{"relay":[1,2]}`},
		"a relay line with no frame": {`{"relay":null}`},
		"a relay line and more":      {`{"relay":{"conn":1,"kind":"open"}} {"id":1}`},
	}
	for name, forged := range cases {
		t.Run(name, func(t *testing.T) {
			s := startPipeGuestWith(t, &RelaySpec{Port: testPort}, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
				return append(forged[:len(forged):len(forged)], envelope(id, Result{Stdout: "real"}))
			})
			if res, err := s.Run(context.Background(), "true", 0); !errors.Is(err, ErrGuestDied) {
				t.Fatalf("Run = %+v, %v; want the guest's death", res, err)
			}
			l := RelayOf(s)
			for {
				c, err := l.Accept() // the connections opened before, then the end
				if err != nil {
					break
				}
				c.Close()
			}
		})
	}
	t.Run("honest", func(t *testing.T) {
		honest := lines(append(full, frame{Conn: 1, Kind: frameEOF}, frame{Conn: 1, Kind: frameClose})...)
		s := startPipeGuestWith(t, &RelaySpec{Port: testPort}, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
			return append(honest[:len(honest):len(honest)], envelope(id, Result{Stdout: "real"}))
		})
		if res, err := s.Run(context.Background(), "true", 0); err != nil || res.Stdout != "real" {
			t.Fatalf("Run = %+v, %v", res, err)
		}
		c, err := RelayOf(s).Accept()
		if err != nil {
			t.Fatal(err)
		}
		if b, err := io.ReadAll(c); err != nil || len(b) != relayWindow {
			t.Fatalf("read %d bytes, %v; want the window's %d", len(b), err, relayWindow)
		}
	})
	t.Run("relay off", func(t *testing.T) {
		s := startPipeGuest(t, func(id json.RawMessage, _ map[string]json.RawMessage) []string {
			return []string{frameLine(open(1)), envelope(id, Result{Stdout: "real"})}
		})
		if res, err := s.Run(context.Background(), "true", 0); !errors.Is(err, ErrGuestDied) {
			t.Fatalf("a relay frame from a sandbox without a relay: Run = %+v, %v", res, err)
		}
		if RelayOf(s) != nil {
			t.Fatal("a relay without asking for one")
		}
	})
}

// testPort names the relay in the tests over pipes, where nothing listens.
const testPort = 4000

// relayPair is both sides of a relay joined by pipes, as the guest and aa-grade are, with
// the guest's side taking no more connections than its slots.
func relayPair(t testing.TB) (guest *relayMux, host *relayListener) {
	t.Helper()
	toHostR, toHostW := io.Pipe()
	toGuestR, toGuestW := io.Pipe()
	toHost, toGuest := &lineWriter{w: toHostW}, &lineWriter{w: toGuestW}
	guest = newRelayMux(func(f frame) error { return toHost.write(relayLine{&f}) }, true, testPort)
	guest.release = func() {}
	host = newRelayListener(func(f frame) error { return toGuest.write(relayLine{&f}) }, testPort)
	var pumps sync.WaitGroup
	pump := func(r io.Reader, m *relayMux) {
		dec := json.NewDecoder(r)
		for {
			var l relayLine
			if err := dec.Decode(&l); err != nil {
				m.shut(err)
				return
			}
			if err := m.receive(*l.Relay); err != nil {
				t.Errorf("an honest frame refused: %v", err)
				m.shut(err)
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
func relayConnection(t *testing.T) (guest *relayMux, host *relayListener, in, out *relayConn) {
	t.Helper()
	guest, host = relayPair(t)
	in, err := guest.open()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := host.Accept()
	if err != nil {
		t.Fatal(err)
	}
	return guest, host, in, conn.(*relayConn)
}

// TestRelayFlowControl: a side that does not read holds exactly one window of a connection,
// and its writer waits there; reading lets the rest through, whole and in order.
func TestRelayFlowControl(t *testing.T) {
	_, _, in, out := relayConnection(t)
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1<<18) // 4 MiB
	var written atomic.Int64
	go func() {
		for p := payload; len(p) > 0; p = p[relayFrameData/2:] {
			n, err := in.Write(p[:relayFrameData/2])
			written.Add(int64(n))
			if err != nil {
				t.Error(err)
				return
			}
		}
		in.CloseWrite()
	}()
	for buffered(out) < relayWindow { // the writer stops there, or the test times out
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // what more the writer would have sent
	if n, w := buffered(out), written.Load(); n != relayWindow || w != relayWindow {
		t.Fatalf("buffered %d, written %d before any read; want the window, %d", n, w, relayWindow)
	}
	got, err := io.ReadAll(out)
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("read %d bytes (equal: %v), %v", len(got), bytes.Equal(got, payload), err)
	}
}

func buffered(c *relayConn) int {
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
				c.(*relayConn).CloseWrite()
			}()
		}
	}()
	var wg sync.WaitGroup
	for i := range relayMaxConns {
		wg.Go(func() {
			c, err := guest.open()
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			payload := bytes.Repeat([]byte{byte(i)}, relayWindow+relayWindow/4+i) // past a window: credit must come back
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

	c, err := guest.open()
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
	guest.shut(io.ErrUnexpectedEOF) // as when aa-grade's end of the channel is gone
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

func open(m *relayMux) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.conns)
}
