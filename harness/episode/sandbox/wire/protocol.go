// Package wire is what the two sides of a sandbox say to each other: aa-grade on the host
// (package sandbox) and the guest, the aa-grade process inside the sandbox that runs each
// command (package guest). Both import this package and neither imports the other, so that
// each can be read, and changed, knowing only what crosses between them: the confinement the
// host hands the guest as it starts it (Confinement), the lines they then exchange (requests,
// replies, relay frames), the rule by which a command's output is cut (Capture), and the
// bounds each side holds the other to.
//
// The protocol: aa-grade writes one request a line on the guest's stdin, and the guest writes
// one reply a line on its stdout, each request answered before the next is sent. With a
// relay, relay frames go both ways between them, at any time, a line each, while a command
// runs too; without one, a relay frame is a line like any forged one.
//
// A request carries an id that aa-grade draws at random for it (64 bits, never 0), and the
// reply echoes it beside the answer:
//
//	{"id":8412335078134712345,"op":"run","cmd":"ls","timeout":300000000000}
//	{"id":8412335078134712345,"answer":{"exit_code":0,"stdout":"...",...}}
//
// The id is what tells aa-grade that a line is the guest's answer to this request. A command
// that gets hold of the guest's stdout (through a process that holds its pipe) could write
// lines of its own there; writing blind, it cannot know the id, and a reply with another id,
// or none, or a line when no request waits (one more than the answers), is taken as the
// guest's death (the episode ends as an error). (A process that could also read the guest's
// stdin could take a request and answer it: the id does not stop that, the sandbox must keep
// commands away from the guest's pipes.)
//
// Whatever a reply holds, aa-grade keeps no more of it than the caps say: a reply line is
// bounded by what an honest answer to its request can be, and a command's streams are cut
// again on aa-grade's side (Clip).
//
// Relay frames (relay.go) carry the connections commands make to the relay port:
//
//	{"relay":{"conn":5077340016,"kind":"open"}}                     guest: a command connected
//	{"relay":{"conn":5077340016,"kind":"data","data":"R0VUIC8..."}} either way: bytes (base64)
//	{"relay":{"conn":5077340016,"kind":"credit","credit":131072}}   the receiver read as many
//	{"relay":{"conn":5077340016,"kind":"eof"}}                      no more data this way
//	{"relay":{"conn":5077340016,"kind":"close"}}                    done; answered by a close
//
// The guest draws each connection's id at random. aa-grade refuses, as the guest's death, a
// frame an honest guest never writes: a line that is not exactly a frame, a frame for an id
// not open (or forgotten: both closes crossed), an open of an open id or beyond MaxConns at
// once, data of more than FrameData bytes, data beyond the credit (each side may send Window
// bytes of a connection, then only as many more as the other side granted back by reading),
// credit beyond what was sent, data after eof. So a connection whose reader is slow, on
// either side, makes neither hold more than a window, and the episode at most MaxConns x
// Window (8 MiB) each side; a frame line is bounded like a reply.
package wire

import (
	"crypto/rand"
	"encoding/binary"
	"time"
)

// Request is one request to the guest: run a command, or read or check a file of the
// workspace.
type Request struct {
	ID      uint64        `json:"id"`
	Op      string        `json:"op"`
	Cmd     string        `json:"cmd,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Name    string        `json:"name,omitempty"`
	Limit   int64         `json:"limit,omitempty"`
}

// Reply is the guest's line for one request: the request's id and the answer (a Result for
// run, a FileAnswer for read and check).
type Reply struct {
	ID     uint64 `json:"id"`
	Answer any    `json:"answer"`
}

// The operations a Request asks for.
const (
	OpRun   = "run"
	OpRead  = "read"
	OpCheck = "check"
)

// NewID draws the id of a request, or of a relay connection: 64 random bits, which a command
// writing into the guest's output cannot guess; never 0, the id of a reply that has none.
func NewID() uint64 {
	var b [8]byte
	for {
		rand.Read(b[:]) // crypto/rand: never fails
		if id := binary.LittleEndian.Uint64(b[:]); id != 0 {
			return id
		}
	}
}
