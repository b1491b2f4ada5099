package wire

import (
	"errors"
	"fmt"
	"net"
	"sync"
)

// Mux is one side's connections of a relay (aa-grade's or the guest's): it sends their
// frames through send and takes the other side's through receive, refusing any frame an
// honest other side would not send.
type Mux struct {
	send   func(Frame) error // writes one frame's line on the control channel
	opener bool              // this side opens connections (the guest); the other accepts them
	addr   net.Addr          // the relay port, as both ends of a connection name it

	mu      sync.Mutex
	conns   map[uint64]*Conn
	broken  error       // the channel ended: every connection fails
	opened  func(*Conn) // aa-grade: hands a connection the guest opened to Accept
	release func()      // the guest: frees a connection's slot once it is forgotten
}

func newMux(send func(Frame) error, opener bool, port int) *Mux {
	return &Mux{send: send, opener: opener, conns: map[uint64]*Conn{},
		addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
}

// NewOpener is the guest's side of a relay on port: it opens a connection (Open) for each
// one a command makes, sends its frames through send, and calls release once a connection is
// forgotten, so that the guest can take one more.
func NewOpener(send func(Frame) error, port int, release func()) *Mux {
	m := newMux(send, true, port)
	m.release = release
	return m
}

// Open makes a connection with a fresh random id and tells the other side (the guest, for
// each command that connected).
func (m *Mux) Open() (*Conn, error) {
	m.mu.Lock()
	if m.broken != nil {
		m.mu.Unlock()
		return nil, m.broken
	}
	id := NewID()
	for m.conns[id] != nil {
		id = NewID()
	}
	c := newConn(m, id)
	m.conns[id] = c
	m.mu.Unlock()
	if err := m.send(Frame{Conn: id, Kind: FrameOpen}); err != nil {
		m.Shut(err)
		return nil, err
	}
	return c, nil
}

// Receive takes one frame of the other side. An error is a frame an honest side never sends:
// the caller ends the channel.
func (m *Mux) Receive(f Frame) error {
	if f.Kind == FrameOpen {
		return m.accept(f)
	}
	if f.Kind != FrameData && len(f.Data) > 0 || f.Kind != FrameCredit && f.Credit != 0 {
		return fmt.Errorf("a relay %q frame with data or credit", f.Kind)
	}
	m.mu.Lock()
	c := m.conns[f.Conn]
	m.mu.Unlock()
	if c == nil {
		return fmt.Errorf("a relay %q frame for connection %d, which is not open", f.Kind, f.Conn)
	}
	switch f.Kind {
	case FrameData:
		return c.received(f.Data)
	case FrameCredit:
		return c.granted(f.Credit)
	case FrameEOF:
		return c.peerEOF()
	case FrameClose:
		return c.peerClose()
	}
	return fmt.Errorf("a relay frame of unknown kind %q", f.Kind)
}

// accept takes a connection the guest opened, within the cap.
func (m *Mux) accept(f Frame) error {
	if m.opener || len(f.Data) > 0 || f.Credit != 0 || f.Conn == 0 {
		return errors.New("a relay open frame this side does not take")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.conns[f.Conn] != nil:
		return fmt.Errorf("a relay open frame for connection %d, which is open already", f.Conn)
	case len(m.conns) >= RelayMaxConns:
		return fmt.Errorf("a relay connection more than the %d allowed at once", RelayMaxConns)
	case m.broken != nil:
		return nil
	}
	c := newConn(m, f.Conn)
	m.conns[f.Conn] = c
	m.opened(c)
	return nil
}

// forget drops a connection both sides closed: its id may not be used again.
func (m *Mux) forget(c *Conn) {
	m.mu.Lock()
	_, open := m.conns[c.id]
	delete(m.conns, c.id)
	m.mu.Unlock()
	if open && m.release != nil {
		m.release()
	}
}

// Shut ends every connection when the channel ends (the sandbox or aa-grade is gone): reads
// return what came before, then err.
func (m *Mux) Shut(err error) {
	m.mu.Lock()
	if m.broken == nil {
		m.broken = fmt.Errorf("the relay ended: %w", err)
	}
	conns := make([]*Conn, 0, len(m.conns))
	for _, c := range m.conns {
		conns = append(conns, c)
	}
	m.mu.Unlock()
	for _, c := range conns {
		c.mu.Lock()
		c.broken = m.broken
		c.wake()
		c.mu.Unlock()
	}
}
