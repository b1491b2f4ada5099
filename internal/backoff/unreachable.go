package backoff

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"net"
	"syscall"
)

// UnreachableAttempts is how many attempts a server that cannot be reached at all gets (see
// Unreachable): enough to ride out a server restarting or a resolver's hiccup, few enough that
// a wrong address or no network fails within seconds. Throttling and server errors come from a
// server that is there, and keep their callers' longer retries.
const UnreachableAttempts = 3

// Unreachable reports whether a failure means no answer can come from that address: a refused
// or unroutable connection, a name that does not resolve, a TLS handshake that fails (a
// certificate not trusted, TLS spoken to a plain HTTP server).
func Unreachable(err error) bool {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var recordErr tls.RecordHeaderError
	var authErr x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	return errors.As(err, &dnsErr) || errors.As(err, &certErr) || errors.As(err, &recordErr) ||
		errors.As(err, &authErr) || errors.As(err, &hostErr) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}
