//go:build linux

package guest

import (
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// listenRelay brings the sandbox's loopback up where it is down (a network namespace of
// Landlock's own; bwrap and docker bring theirs up) and listens on its 127.0.0.1:port.
func listenRelay(port int) (net.Listener, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	defer func() { _ = unix.Close(fd) }() // a socket for ioctls only: nothing sent
	lo, err := unix.NewIfreq("lo")
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, lo); err != nil {
		return nil, fmt.Errorf("relay: the loopback's flags: %w", err)
	}
	if flags := lo.Uint16(); flags&unix.IFF_UP == 0 {
		lo.SetUint16(flags | unix.IFF_UP)
		if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, lo); err != nil {
			return nil, fmt.Errorf("relay: bring the sandbox's loopback up: %w", err)
		}
	}
	l, err := net.Listen("tcp4", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("relay: %w", err)
	}
	return l, nil
}

// serveRelay opens a relayed connection for each command's connection to l, each holding a
// slot of slots until m forgets it (m's release takes the slot back): at most
// wire.RelayMaxConns at once (the next wait in l's backlog), until l fails.
func serveRelay(l net.Listener, m *wire.Mux, slots chan struct{}) {
	for {
		slots <- struct{}{}
		tcp, err := l.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil { // out of descriptors, or the like: a connection lost, not the relay
			<-slots
			time.Sleep(10 * time.Millisecond)
			continue
		}
		c, err := m.Open()
		if err != nil {
			_ = tcp.Close() // refused: nothing of it was read or written; the channel ended
			return
		}
		go pumpRelay(tcp.(*net.TCPConn), c)
	}
}

// pumpRelay copies both ways between a command's connection and its relayed one, passing
// half-closes on; a reset on either side closes both.
func pumpRelay(tcp *net.TCPConn, c *wire.Conn) {
	var up sync.WaitGroup
	up.Go(func() {
		buf := make([]byte, wire.RelayFrameBytes)
		for {
			n, err := tcp.Read(buf)
			if n > 0 {
				if _, err := c.Write(buf[:n]); err != nil {
					return // aa-grade closed: what it sent is still delivered below
				}
			}
			switch {
			case errors.Is(err, io.EOF):
				_ = c.CloseWrite() // fails once aa-grade closed, which ends the copy below
				return
			case err != nil:
				_ = c.Close() // net.ErrClosed at most: closed already
				return
			}
		}
	})
	// Either side's failure ends the connection: there is no one to tell it to but the command,
	// which sees its connection end.
	_, err := io.Copy(tcp, c)
	if err == nil && !c.PeerGone() {
		_ = tcp.CloseWrite()
	} else {
		_ = tcp.Close() // everything came (aa-grade closed), or one side broke
	}
	up.Wait()
	_ = tcp.Close()
	_ = c.Close()
}
