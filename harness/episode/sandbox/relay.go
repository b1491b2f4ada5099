package sandbox

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// RelaySpec asks for a relay: commands inside the sandbox may connect to 127.0.0.1:Port, and
// each connection reaches aa-grade as a net.Conn accepted from RelayOf(sb). The sandbox keeps
// no network: the guest listens on its own loopback and carries the bytes over its control
// channel (see protocol.go).
type RelaySpec struct {
	// Port is the port of the sandbox's 127.0.0.1 that commands connect to (1024 to 65535:
	// the guest binds it without privilege). Every episode has a loopback of its own, so all
	// may use the same port.
	Port int
}

// ErrNoRelay marks a sandbox that cannot relay here: the none backend, and Landlock without
// a network namespace of its own, where a port of 127.0.0.1 would be the host's.
var ErrNoRelay = errors.New("this sandbox cannot offer a relay here")

// RelayOf is the host's end of sb's relay: its Accept returns one net.Conn for each
// connection a command makes to the relay port. nil when sb's spec asked for no relay.
func RelayOf(sb Sandbox) net.Listener {
	if s, ok := sb.(*session); ok && s.relay != nil {
		return s.relay
	}
	return nil
}

// relayOpens says what an agent run's relay opens where a backend has one.
const relayOpens = "an agent run (--agent) opens one port of the sandbox's own 127.0.0.1 (IPv4 TCP clients only, no bind or listen), relayed to aa-grade's model gateway"

// relayPort is the port the guest listens on, 0 for none.
func (s *Spec) relayPort() int {
	if s.Relay == nil {
		return 0
	}
	return s.Relay.Port
}

func (r *RelaySpec) check() error {
	if r != nil && (r.Port < 1024 || r.Port > 65535) {
		return fmt.Errorf("relay port %d: want 1024 to 65535", r.Port)
	}
	return nil
}

// The relay's bounds: what one side may hold for one episode is at most relayMaxConns x
// relayWindow (8 MiB), however slowly the other end of a connection reads.
const (
	// relayMaxConns bounds the connections open at once; the guest accepts no more until
	// one ends (the others wait in the listener's backlog).
	relayMaxConns = 32
	// relayWindow is what a side may send on a connection before the other grants it more
	// (the credit): the most a receiver ever buffers for one connection.
	relayWindow = 256 << 10
	// relayFrameData bounds the bytes of one data frame.
	relayFrameData = 32 << 10
)

// relayLineBytes bounds a relay frame's line: its data base64-encoded, and the envelope.
var relayLineBytes = base64.StdEncoding.EncodedLen(relayFrameData) + replySlack

// The kinds of relay frames.
const (
	frameOpen   = "open"   // guest to aa-grade: a command connected
	frameData   = "data"   // bytes, within the receiver's credit
	frameCredit = "credit" // the receiver read Credit bytes: the sender may send as many more
	frameEOF    = "eof"    // the sender will send no more data (a half-close)
	frameClose  = "close"  // the sender is done with the connection; answered by a close
)

// frame is one relay frame, on a line of its own: {"relay":{...}}.
type frame struct {
	Conn   uint64 `json:"conn"`
	Kind   string `json:"kind"`
	Data   []byte `json:"data,omitempty"`
	Credit int    `json:"credit,omitempty"`
}

// relayLine is the line of a frame; relayPrefix is how every such line starts, which tells
// it from a request or a reply without decoding it twice.
type relayLine struct {
	Relay *frame `json:"relay"`
}

const relayPrefix = `{"relay":`

// errRelayReset is what a write on a connection gets once the other side closed it.
var errRelayReset = errors.New("relay connection closed by the other side")

// lineWriter writes JSON lines on the control channel, each whole, from any goroutine.
type lineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lineWriter) write(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(line, '\n'))
	return err
}

// relayMux is one side's connections of a relay (aa-grade's or the guest's): it sends their
// frames through send and takes the other side's through receive, refusing any frame an
// honest other side would not send.
type relayMux struct {
	send   func(frame) error // writes one frame's line on the control channel
	opener bool              // this side opens connections (the guest); the other accepts them
	addr   net.Addr          // the relay port, as both ends of a connection name it

	mu      sync.Mutex
	conns   map[uint64]*relayConn
	broken  error            // the channel ended: every connection fails
	opened  func(*relayConn) // aa-grade: hands a connection the guest opened to Accept
	release func()           // the guest: frees a connection's slot once it is forgotten
}

func newRelayMux(send func(frame) error, opener bool, port int) *relayMux {
	return &relayMux{send: send, opener: opener, conns: map[uint64]*relayConn{},
		addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: port}}
}

// open makes a connection with a fresh random id and tells the other side (the guest, for
// each command that connected).
func (m *relayMux) open() (*relayConn, error) {
	m.mu.Lock()
	if m.broken != nil {
		m.mu.Unlock()
		return nil, m.broken
	}
	id := newRequestID()
	for m.conns[id] != nil {
		id = newRequestID()
	}
	c := newRelayConn(m, id)
	m.conns[id] = c
	m.mu.Unlock()
	if err := m.send(frame{Conn: id, Kind: frameOpen}); err != nil {
		m.shut(err)
		return nil, err
	}
	return c, nil
}

// receive takes one frame of the other side. An error is a frame an honest side never sends:
// the caller ends the channel.
func (m *relayMux) receive(f frame) error {
	if f.Kind == frameOpen {
		return m.accept(f)
	}
	if f.Kind != frameData && len(f.Data) > 0 || f.Kind != frameCredit && f.Credit != 0 {
		return fmt.Errorf("a relay %q frame with data or credit", f.Kind)
	}
	m.mu.Lock()
	c := m.conns[f.Conn]
	m.mu.Unlock()
	if c == nil {
		return fmt.Errorf("a relay %q frame for connection %d, which is not open", f.Kind, f.Conn)
	}
	switch f.Kind {
	case frameData:
		return c.received(f.Data)
	case frameCredit:
		return c.granted(f.Credit)
	case frameEOF:
		return c.peerEOF()
	case frameClose:
		return c.peerClose()
	}
	return fmt.Errorf("a relay frame of unknown kind %q", f.Kind)
}

// accept takes a connection the guest opened, within the cap.
func (m *relayMux) accept(f frame) error {
	if m.opener || len(f.Data) > 0 || f.Credit != 0 || f.Conn == 0 {
		return errors.New("a relay open frame this side does not take")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.conns[f.Conn] != nil:
		return fmt.Errorf("a relay open frame for connection %d, which is open already", f.Conn)
	case len(m.conns) >= relayMaxConns:
		return fmt.Errorf("a relay connection more than the %d allowed at once", relayMaxConns)
	case m.broken != nil:
		return nil
	}
	c := newRelayConn(m, f.Conn)
	m.conns[f.Conn] = c
	m.opened(c)
	return nil
}

// forget drops a connection both sides closed: its id may not be used again.
func (m *relayMux) forget(c *relayConn) {
	m.mu.Lock()
	_, open := m.conns[c.id]
	delete(m.conns, c.id)
	m.mu.Unlock()
	if open && m.release != nil {
		m.release()
	}
}

// shut ends every connection when the channel ends (the sandbox or aa-grade is gone): reads
// return what came before, then err.
func (m *relayMux) shut(err error) {
	m.mu.Lock()
	if m.broken == nil {
		m.broken = fmt.Errorf("the relay ended: %w", err)
	}
	conns := make([]*relayConn, 0, len(m.conns))
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

// relayConn is one relayed connection, as a net.Conn: on aa-grade's side what the gateway
// serves, on the guest's side what it copies to and from the command's TCP connection.
type relayConn struct {
	mux *relayMux
	id  uint64
	wmu sync.Mutex // one Write or CloseWrite at a time: data keeps its order
	smu sync.Mutex // one frame of this connection at a time, none after its close

	mu         sync.Mutex
	changed    chan struct{} // closed and replaced at every change a Read or Write may wait for
	in         [][]byte      // data received and not yet read
	inBytes    int
	ungranted  int  // bytes read and not yet granted back
	inEOF      bool // the other side sends no more data
	credit     int  // bytes this side may still send
	outEOF     bool // this side sent eof
	closed     bool // Close was called
	closing    bool // this side's close frame is going out: no frame follows it
	closeSent  bool // this side's close frame is out
	peerClosed bool // the other side's close came
	broken     error
	rdl, wdl   time.Time // deadlines
}

func newRelayConn(m *relayMux, id uint64) *relayConn {
	return &relayConn{mux: m, id: id, changed: make(chan struct{}), credit: relayWindow}
}

// wake tells every waiting Read and Write to look again; c.mu is held.
func (c *relayConn) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// await waits, c.mu held, for a change or the deadline (zero: none); false once it passed.
func (c *relayConn) await(deadline time.Time) bool {
	changed := c.changed
	c.mu.Unlock()
	defer c.mu.Lock()
	if deadline.IsZero() {
		<-changed
		return true
	}
	wait := time.Until(deadline)
	if wait <= 0 {
		return false
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-changed:
		return true
	case <-timer.C:
		return false
	}
}

// received queues the other side's data, which must fit in what this side granted.
func (c *relayConn) received(data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(data) == 0 || len(data) > relayFrameData:
		return fmt.Errorf("a relay data frame of %d bytes (1 to %d)", len(data), relayFrameData)
	case c.inEOF:
		return errors.New("relay data after the sender's eof")
	case c.inBytes+c.ungranted+len(data) > relayWindow:
		return fmt.Errorf("relay data beyond the %d bytes granted", relayWindow)
	case c.closed:
		c.ungranted += len(data) // dropped, never granted back
		return nil
	}
	c.in = append(c.in, data)
	c.inBytes += len(data)
	c.wake()
	return nil
}

// granted adds credit the other side gave back; never more than was sent.
func (c *relayConn) granted(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= 0 || c.credit+n > relayWindow {
		return fmt.Errorf("a relay credit of %d bytes, more than was sent", n)
	}
	c.credit += n
	c.wake()
	return nil
}

func (c *relayConn) peerEOF() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inEOF {
		return errors.New("a relay eof after the sender's eof or close")
	}
	c.inEOF = true
	c.wake()
	return nil
}

// peerClose: the other side is done; this side answers with its own close (from a goroutine
// of its own: the receiver of frames never waits on the channel) and then forgets the id.
func (c *relayConn) peerClose() error {
	c.mu.Lock()
	if c.peerClosed {
		c.mu.Unlock()
		return errors.New("a second relay close")
	}
	c.peerClosed, c.inEOF = true, true
	c.wake()
	sent, closing := c.closeSent, c.closing
	c.mu.Unlock()
	switch {
	case sent:
		c.mux.forget(c)
	case !closing:
		go c.send(frame{Conn: c.id, Kind: frameClose})
	}
	return nil
}

// send sends one frame of c; none goes after its close, which a side that got both closes
// would take for a frame of a connection never opened. Once both closes crossed, the id is
// forgotten.
func (c *relayConn) send(f frame) error {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closing = f.Kind == frameClose
	c.mu.Unlock()
	err := c.mux.send(f)
	if f.Kind == frameClose {
		c.mu.Lock()
		c.closeSent = true
		forget := c.peerClosed
		c.mu.Unlock()
		if forget {
			c.mux.forget(c)
		}
	}
	return err
}

// Read reads data the other side sent, and grants the sender more once half a window was read.
func (c *relayConn) Read(p []byte) (int, error) {
	c.mu.Lock()
	for {
		switch {
		case c.closed:
			c.mu.Unlock()
			return 0, net.ErrClosed
		case c.inBytes > 0:
			n := 0
			for n < len(p) && len(c.in) > 0 {
				k := copy(p[n:], c.in[0])
				n += k
				if c.in[0] = c.in[0][k:]; len(c.in[0]) == 0 {
					c.in[0] = nil
					c.in = c.in[1:]
				}
			}
			c.inBytes -= n
			c.ungranted += n
			grant := 0
			if c.ungranted >= relayWindow/2 && !c.inEOF {
				grant, c.ungranted = c.ungranted, 0
			}
			c.mu.Unlock()
			if grant > 0 {
				// Not behind a Write waiting for credit (wmu): this grant may be what it waits for.
				c.send(frame{Conn: c.id, Kind: frameCredit, Credit: grant}) // a failure is the channel's end, which shut reports
			}
			return n, nil
		case c.inEOF:
			c.mu.Unlock()
			return 0, io.EOF
		case c.broken != nil:
			err := c.broken
			c.mu.Unlock()
			return 0, err
		}
		if !c.await(c.rdl) {
			c.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
	}
}

// Write sends p in frames within the credit, waiting for more as the other side reads.
func (c *relayConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	written := 0
	for len(p) > 0 {
		c.mu.Lock()
		for c.credit == 0 && !c.closed && !c.outEOF && !c.peerClosed && c.broken == nil {
			if !c.await(c.wdl) {
				c.mu.Unlock()
				return written, os.ErrDeadlineExceeded
			}
		}
		var err error
		switch {
		case c.closed:
			err = net.ErrClosed
		case c.outEOF:
			err = errors.New("write on a relay connection after CloseWrite")
		case c.peerClosed:
			err = errRelayReset
		case c.broken != nil:
			err = c.broken
		}
		n := min(len(p), c.credit, relayFrameData)
		c.credit -= n
		c.mu.Unlock()
		if err != nil {
			return written, err
		}
		if err := c.send(frame{Conn: c.id, Kind: frameData, Data: p[:n]}); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite tells the other side no more data comes (a TCP half-close).
func (c *relayConn) CloseWrite() error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.mu.Lock()
	skip := c.outEOF || c.closed || c.peerClosed
	c.outEOF = true
	c.wake()
	c.mu.Unlock()
	if skip {
		return nil
	}
	return c.send(frame{Conn: c.id, Kind: frameEOF})
}

// Close ends the connection: what this side sent still arrives, what comes after is dropped.
func (c *relayConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	c.ungranted += c.inBytes // dropped, never granted back
	c.in, c.inBytes = nil, 0
	c.wake()
	c.mu.Unlock()
	c.send(frame{Conn: c.id, Kind: frameClose}) // net.ErrClosed: answering the other side's already; another failure is the channel's end
	return nil
}

// peerGone says the other side closed the connection.
func (c *relayConn) peerGone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerClosed
}

func (c *relayConn) LocalAddr() net.Addr  { return c.mux.addr }
func (c *relayConn) RemoteAddr() net.Addr { return relayAddr(c.id) }

func (c *relayConn) SetDeadline(t time.Time) error {
	c.SetReadDeadline(t)
	return c.SetWriteDeadline(t)
}

func (c *relayConn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.wake()
	c.mu.Unlock()
	return nil
}

func (c *relayConn) SetWriteDeadline(t time.Time) error {
	c.mu.Lock()
	c.wdl = t
	c.wake()
	c.mu.Unlock()
	return nil
}

// relayAddr names the in-sandbox end of a connection by its id.
type relayAddr uint64

func (relayAddr) Network() string  { return "relay" }
func (a relayAddr) String() string { return "sandbox:" + strconv.FormatUint(uint64(a), 16) }

// relayListener is aa-grade's end of a relay: Accept returns the connections the guest opens.
type relayListener struct {
	mux      *relayMux
	incoming chan *relayConn // at most relayMaxConns wait: the mux refuses more
	done     chan struct{}
	once     sync.Once
}

func newRelayListener(send func(frame) error, port int) *relayListener {
	l := &relayListener{mux: newRelayMux(send, false, port), incoming: make(chan *relayConn, relayMaxConns), done: make(chan struct{})}
	l.mux.opened = func(c *relayConn) {
		select {
		case <-l.done:
			go c.Close() // nobody accepts any more
			return
		default:
		}
		select {
		case l.incoming <- c:
		default:
			go c.Close() // as many wait already, closed by the other side (the mux never blocks)
		}
	}
	return l
}

func (l *relayListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.incoming:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close stops accepting: connections not yet accepted, and those that come later, are closed.
func (l *relayListener) Close() error {
	l.once.Do(func() {
		l.mux.mu.Lock() // no connection is queued while done closes
		close(l.done)
		l.mux.mu.Unlock()
		for {
			select {
			case c := <-l.incoming:
				go c.Close()
			default:
				return
			}
		}
	})
	return nil
}

func (l *relayListener) Addr() net.Addr { return l.mux.addr }
