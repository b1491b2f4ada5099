package wire

import (
	"io"
	"net"
	"testing"
)

// BenchmarkRelayProtocol measures the relay's own cost, both sides in one process joined by
// pipes (no sandbox, no TCP): a byte there and back on a connection, and 1 MiB one way.
func BenchmarkRelayProtocol(b *testing.B) {
	// serve accepts the host's connections and hands each to handle.
	serve := func(host *Listener, handle func(net.Conn)) {
		for {
			c, err := host.Accept()
			if err != nil {
				return
			}
			go handle(c)
		}
	}
	b.Run("roundtrip", func(b *testing.B) {
		guest, host := relayPair(b)
		go serve(host, func(c net.Conn) { io.Copy(c, c) })
		c, err := guest.Open()
		if err != nil {
			b.Fatal(err)
		}
		buf := []byte{1}
		for b.Loop() {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("1MiB", func(b *testing.B) {
		guest, host := relayPair(b)
		go serve(host, func(c net.Conn) { io.Copy(io.Discard, c) })
		c, err := guest.Open()
		if err != nil {
			b.Fatal(err)
		}
		buf := make([]byte, 1<<20)
		b.SetBytes(int64(len(buf)))
		for b.Loop() {
			if _, err := c.Write(buf); err != nil {
				b.Fatal(err)
			}
		}
	})
}
