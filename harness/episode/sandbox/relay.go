package sandbox

import (
	"errors"
	"fmt"
	"net"
)

// RelaySpec asks for a relay: commands inside the sandbox may connect to 127.0.0.1:Port, and
// each connection reaches aa-grade as a net.Conn accepted from RelayOf(sb). The sandbox keeps
// no network: the guest listens on its own loopback and carries the bytes over its control
// channel (see package wire).
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
const relayOpens = "an agent run (--agent) opens one port of the sandbox's own 127.0.0.1 (IPv4 TCP clients only, no " +
	"bind or listen), relayed to aa-grade's model gateway"

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
