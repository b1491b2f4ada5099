// Package dockerproxy serves the local Docker daemon's socket on a TCP port of 127.0.0.1, as a
// daemon in a VM or on another machine is reached (DOCKER_HOST=tcp://...), for tests: the
// daemon itself is left as it is (it may serve others), only a second way in is opened, and
// only for the test that asks.
package dockerproxy

import (
	"io"
	"net"
	"sync"
	"testing"
)

// Socket is the daemon's socket the proxy passes connections to.
const Socket = "/var/run/docker.sock"

// Start listens on a port of 127.0.0.1 and passes each connection to the daemon's socket,
// half-closes included (an episode's end closes only its input); it returns the DOCKER_HOST
// that reaches it. The listener and the connections end with the test.
func Start(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		conns = map[net.Conn]bool{}
	)
	track := func(c net.Conn, open bool) {
		mu.Lock()
		defer mu.Unlock()
		if open {
			conns[c] = true
		} else {
			delete(conns, c)
		}
	}
	t.Cleanup(func() {
		_ = ln.Close() // the test is over
		mu.Lock()
		for c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	pass := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		_ = dst.(interface{ CloseWrite() error }).CloseWrite()
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer func() { _ = c.Close() }()
				u, err := net.Dial("unix", Socket)
				if err != nil {
					return
				}
				defer func() { _ = u.Close() }()
				track(c, true)
				track(u, true)
				defer track(c, false)
				defer track(u, false)
				done := make(chan struct{})
				go func() { pass(u, c); close(done) }()
				pass(c, u)
				<-done
			})
		}
	})
	return "tcp://" + ln.Addr().String()
}
