package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// frameLine is the line a guest writes for f.
func frameLine(f wire.Frame) string {
	b, err := json.Marshal(wire.RelayLine{Relay: &f})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// TestRelayRefusesFramesAnHonestGuestNeverSends: each forged or broken frame from the guest's
// side ends the sandbox (the request in flight fails as the guest's death) and the relay's
// listener; honest frames around the same request pass.
func TestRelayRefusesFramesAnHonestGuestNeverSends(t *testing.T) {
	open := func(id uint64) wire.Frame { return wire.Frame{Conn: id, Kind: wire.FrameOpen} }
	data := func(id uint64, n int) wire.Frame {
		return wire.Frame{Conn: id, Kind: wire.FrameData, Data: make([]byte, n)}
	}
	full := []wire.Frame{open(1)}
	for range wire.RelayWindow / wire.RelayFrameBytes {
		full = append(full, data(1, wire.RelayFrameBytes))
	}
	var overCap []wire.Frame
	for i := range wire.RelayMaxConns + 1 {
		overCap = append(overCap, open(uint64(i+1)))
	}
	lines := func(fs ...wire.Frame) []string {
		var out []string
		for _, f := range fs {
			out = append(out, frameLine(f))
		}
		return out
	}
	cases := map[string][]string{
		"a connection never opened":  lines(data(7, 10)),
		"data beyond the window":     lines(append(full, data(1, 1))...),
		"a frame of too much data":   lines(open(1), data(1, wire.RelayFrameBytes+1)),
		"an empty data frame":        lines(open(1), data(1, 0)),
		"credit for nothing sent":    lines(open(1), wire.Frame{Conn: 1, Kind: wire.FrameCredit, Credit: 1}),
		"an open of an open id":      lines(open(1), open(1)),
		"an open of id 0":            lines(open(0)),
		"an open over the cap":       lines(overCap...),
		"data after eof":             lines(open(1), wire.Frame{Conn: 1, Kind: wire.FrameEOF}, data(1, 1)),
		"a second eof":               lines(open(1), wire.Frame{Conn: 1, Kind: wire.FrameEOF}, wire.Frame{Conn: 1, Kind: wire.FrameEOF}),
		"an eof with data":           lines(open(1), wire.Frame{Conn: 1, Kind: wire.FrameEOF, Data: []byte("x")}),
		"a frame of no known kind":   lines(open(1), wire.Frame{Conn: 1, Kind: "reset"}),
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
		honest := lines(append(full, wire.Frame{Conn: 1, Kind: wire.FrameEOF}, wire.Frame{Conn: 1, Kind: wire.FrameClose})...)
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
		if b, err := io.ReadAll(c); err != nil || len(b) != wire.RelayWindow {
			t.Fatalf("read %d bytes, %v; want the window's %d", len(b), err, wire.RelayWindow)
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
