// Package closedport gives tests an address on 127.0.0.1 where nothing listens: a port just
// freed, for what a client does when a server cannot be reached.
package closedport

import (
	"net"
	"testing"
)

// Addr is HOST:PORT on 127.0.0.1 where nothing listens.
func Addr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // a listener that accepted nothing
	return addr
}
