package wire

import (
	"net"
	"sync"
)

// Listener is aa-grade's end of a relay: Accept returns the connections the guest opens.
type Listener struct {
	mux      *Mux
	incoming chan *Conn // at most RelayMaxConns wait: the mux refuses more
	done     chan struct{}
	once     sync.Once
}

// NewListener is aa-grade's end of a relay on port, which sends its frames through send.
func NewListener(send func(Frame) error, port int) *Listener {
	l := &Listener{mux: newMux(send, false, port), incoming: make(chan *Conn, RelayMaxConns), done: make(chan struct{})}
	l.mux.opened = func(c *Conn) {
		select {
		case <-l.done:
			go c.drop() // nobody accepts any more
			return
		default:
		}
		select {
		case l.incoming <- c:
		default:
			go c.drop() // as many wait already, closed by the other side (the mux never blocks)
		}
	}
	return l
}

func (l *Listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.incoming:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting: connections not yet accepted, and those that come later, are closed.
func (l *Listener) Close() error {
	l.once.Do(func() {
		l.mux.mu.Lock() // no connection is queued while done closes
		close(l.done)
		l.mux.mu.Unlock()
		for {
			select {
			case c := <-l.incoming:
				go c.drop()
			default:
				return
			}
		}
	})
	return nil
}

func (l *Listener) Addr() net.Addr { return l.mux.addr }

// Receive takes one frame of the guest's; an error is one an honest guest never sends (see
// Mux.Receive).
func (l *Listener) Receive(f Frame) error { return l.mux.Receive(f) }

// Shut fails every connection once the guest's output has ended (see Mux.Shut).
func (l *Listener) Shut(err error) { l.mux.Shut(err) }
