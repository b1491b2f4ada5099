package sandbox

import "time"

// The guest protocol: aa-grade writes one request a line on the guest's stdin, and the guest
// writes one reply a line on its stdout, each request answered before the next is sent. With
// a relay (Spec.Relay), relay frames go both ways between them, at any time, a line each,
// while a command runs too; without one, a relay frame is a line like any forged one.
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
// bounded by what an honest answer to its request can be (answerLimit), and a command's
// streams are cut again on aa-grade's side (clipResult).
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
// not open (or forgotten: both closes crossed), an open of an open id or beyond relayMaxConns
// at once, data of more than relayFrameData bytes, data beyond the credit (each side may
// send relayWindow bytes of a connection, then only as many more as the other side granted
// back by reading), credit beyond what was sent, data after eof. So a connection whose reader
// is slow, on either side, makes neither hold more than a window, and the episode at most
// relayMaxConns x relayWindow (8 MiB) each side; a frame line is bounded like a reply.

// request is one request to the guest: run a command, or read or check a file of the
// workspace.
type request struct {
	ID      uint64        `json:"id"`
	Op      string        `json:"op"`
	Cmd     string        `json:"cmd,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Name    string        `json:"name,omitempty"`
	Limit   int64         `json:"limit,omitempty"`
}

// reply is the guest's line for one request: the request's id and the answer (a Result for
// run, a fileAnswer for read and check).
type reply struct {
	ID     uint64 `json:"id"`
	Answer any    `json:"answer"`
}

const (
	opRun   = "run"
	opRead  = "read"
	opCheck = "check"
)
