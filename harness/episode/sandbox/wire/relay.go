package wire

import (
	"errors"
)

// The relay's bounds: what one side may hold for one episode is at most RelayMaxConns x
// RelayWindow (8 MiB), however slowly the other end of a connection reads.
const (
	// RelayMaxConns bounds the connections open at once; the guest accepts no more until
	// one ends (the others wait in the listener's backlog).
	RelayMaxConns = 32
	// RelayWindow is what a side may send on a connection before the other grants it more
	// (the credit): the most a receiver ever buffers for one connection.
	RelayWindow = 256 << 10
	// RelayFrameBytes bounds the bytes of one data frame.
	RelayFrameBytes = 32 << 10
)

// The kinds of relay frames.
const (
	FrameOpen   = "open"   // guest to aa-grade: a command connected
	FrameData   = "data"   // bytes, within the receiver's credit
	FrameCredit = "credit" // the receiver read Credit bytes: the sender may send as many more
	FrameEOF    = "eof"    // the sender will send no more data (a half-close)
	FrameClose  = "close"  // the sender is done with the connection; answered by a close
)

// Frame is one relay frame, on a line of its own: {"relay":{...}}.
type Frame struct {
	Conn   uint64 `json:"conn"`
	Kind   string `json:"kind"`
	Data   []byte `json:"data,omitempty"`
	Credit int    `json:"credit,omitempty"`
}

// RelayLine is the line of a frame.
type RelayLine struct {
	Relay *Frame `json:"relay"`
}

// RelayPrefix is how every RelayLine starts, which tells it from a request or a reply
// without decoding it twice.
const RelayPrefix = `{"relay":`

// errRelayReset is what a write on a connection gets once the other side closed it.
var errRelayReset = errors.New("relay connection closed by the other side")
