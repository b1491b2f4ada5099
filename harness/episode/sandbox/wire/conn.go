package wire

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"
)

// Conn is one relayed connection, as a net.Conn: on aa-grade's side what the gateway
// serves, on the guest's side what it copies to and from the command's TCP connection.
type Conn struct {
	mux *Mux
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

func newConn(m *Mux, id uint64) *Conn {
	return &Conn{mux: m, id: id, changed: make(chan struct{}), credit: RelayWindow}
}

// wake tells every waiting Read and Write to look again; c.mu is held.
func (c *Conn) wake() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// await waits, c.mu held, for a change or the deadline (zero: none); false once it passed.
func (c *Conn) await(deadline time.Time) bool {
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
func (c *Conn) received(data []byte) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case len(data) == 0 || len(data) > RelayFrameBytes:
		return fmt.Errorf("a relay data frame of %d bytes (1 to %d)", len(data), RelayFrameBytes)
	case c.inEOF:
		return errors.New("relay data after the sender's eof")
	case c.inBytes+c.ungranted+len(data) > RelayWindow:
		return fmt.Errorf("relay data beyond the %d bytes granted", RelayWindow)
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
func (c *Conn) granted(n int) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if n <= 0 || c.credit+n > RelayWindow {
		return fmt.Errorf("a relay credit of %d bytes, more than was sent", n)
	}
	c.credit += n
	c.wake()
	return nil
}

func (c *Conn) peerEOF() error {
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
func (c *Conn) peerClose() error {
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
		go c.answerClose()
	}
	return nil
}

// answerClose closes this side in answer to the other's close. It fails only when this side
// is closing already (net.ErrClosed), or when the channel has ended, which Mux.Shut reports.
func (c *Conn) answerClose() { _ = c.send(Frame{Conn: c.id, Kind: FrameClose}) }

// send sends one frame of c; none goes after its close, which a side that got both closes
// would take for a frame of a connection never opened. Once both closes crossed, the id is
// forgotten.
func (c *Conn) send(f Frame) error {
	c.smu.Lock()
	defer c.smu.Unlock()
	c.mu.Lock()
	if c.closing {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closing = f.Kind == FrameClose
	c.mu.Unlock()
	err := c.mux.send(f)
	if f.Kind == FrameClose {
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
func (c *Conn) Read(p []byte) (int, error) {
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
			if c.ungranted >= RelayWindow/2 && !c.inEOF {
				grant, c.ungranted = c.ungranted, 0
			}
			c.mu.Unlock()
			if grant > 0 {
				// Not behind a Write waiting for credit (wmu): this grant may be what it waits for.
				// A failure is the channel's end, which Mux.Shut reports.
				_ = c.send(Frame{Conn: c.id, Kind: FrameCredit, Credit: grant})
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
func (c *Conn) Write(p []byte) (int, error) {
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
		n := min(len(p), c.credit, RelayFrameBytes)
		c.credit -= n
		c.mu.Unlock()
		if err != nil {
			return written, err
		}
		if err := c.send(Frame{Conn: c.id, Kind: FrameData, Data: p[:n]}); err != nil {
			return written, err
		}
		written += n
		p = p[n:]
	}
	return written, nil
}

// CloseWrite tells the other side no more data comes (a TCP half-close).
func (c *Conn) CloseWrite() error {
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
	return c.send(Frame{Conn: c.id, Kind: FrameEOF})
}

// Close ends the connection: what this side sent still arrives, what comes after is dropped.
func (c *Conn) Close() error {
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
	// net.ErrClosed: answering the other side's already; another failure is the channel's end.
	_ = c.send(Frame{Conn: c.id, Kind: FrameClose})
	return nil
}

// drop closes a connection nobody will use; its only error is net.ErrClosed, for a connection
// closed already.
func (c *Conn) drop() { _ = c.Close() }

// PeerGone says the other side closed the connection.
func (c *Conn) PeerGone() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.peerClosed
}

func (c *Conn) LocalAddr() net.Addr  { return c.mux.addr }
func (c *Conn) RemoteAddr() net.Addr { return relayAddr(c.id) }

func (c *Conn) SetDeadline(t time.Time) error {
	return errors.Join(c.SetReadDeadline(t), c.SetWriteDeadline(t))
}

func (c *Conn) SetReadDeadline(t time.Time) error {
	c.mu.Lock()
	c.rdl = t
	c.wake()
	c.mu.Unlock()
	return nil
}

func (c *Conn) SetWriteDeadline(t time.Time) error {
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
