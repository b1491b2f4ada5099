//go:build linux

package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// testRelayPort is the relay's port in the tests' sandboxes; the host's own 127.0.0.1:8417,
// whatever holds it, is never what a command reaches.
const testRelayPort = 8417

// startRelay starts a sandbox of b with a relay, and serves h on its host end.
func startRelay(t *testing.T, b Backend, f fixture, h http.Handler) (Sandbox, *countingListener) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sb, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"}, Scratch: f.scratch,
		Guest: exe, GuestArg: []string{GuestCommand}, Relay: &RelaySpec{Port: testRelayPort}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	l := &countingListener{Listener: RelayOf(sb)}
	if l.Listener == nil {
		t.Fatal("a sandbox started with a relay has none")
	}
	served := make(chan error, 1)
	go func() { served <- http.Serve(l, h) }()
	t.Cleanup(func() {
		sb.Close()
		if err := <-served; !errors.Is(err, net.ErrClosed) {
			t.Errorf("serving the relay ended with %v, want net.ErrClosed once the sandbox ended", err)
		}
	})
	return sb, l
}

// countingListener counts the relay's connections open at once, and the most.
type countingListener struct {
	net.Listener
	open, most atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := l.open.Add(1)
	for m := l.most.Load(); n > m && !l.most.CompareAndSwap(m, n); m = l.most.Load() {
	}
	return &countedConn{Conn: c, l: l}, nil
}

type countedConn struct {
	net.Conn
	l    *countingListener
	once sync.Once
}

func (c *countedConn) CloseWrite() error {
	return c.Conn.(interface{ CloseWrite() error }).CloseWrite()
}

func (c *countedConn) Close() error {
	c.once.Do(func() { c.l.open.Add(-1) })
	return c.Conn.Close()
}

// pattern is n bytes the host and the Python client both make: a period of 251, which no
// frame or buffer size divides, so that a lost, doubled or reordered piece shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i % 251)
	}
	return b
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

// relayHandler is the host's server in the tests: /hello answers a line, /echo the size and
// sum of the body it got, then /big?n=N bytes of the pattern.
func relayHandler() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("/hello", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "hello from the host\n") })
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		fmt.Fprintf(w, "%d %s\n", len(b), sum(b))
		w.Write(pattern(n))
	})
	return mux
}

// pyClient is a Python client for the tests: call(method, path, body) returns the status and
// the body of the answer, over http.client to the relay's port.
var pyClient = fmt.Sprintf(`
import hashlib, http.client, socket, sys, threading
PORT = %d
def call(method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
    c.request(method, path, body=body)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data
def pattern(n):
    return (bytes(range(251)) * (n // 251 + 1))[:n]
`, testRelayPort)

// runPython runs a Python program (pyClient, then code) in sb.
func runPython(t *testing.T, sb Sandbox, code string) Result {
	t.Helper()
	res, err := sb.Run(context.Background(), "python3 - <<'PY'\n"+pyClient+code+"\nPY", 2*time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestRelay: commands reach the host's server through the relay, on every isolating backend:
// a request, megabytes both ways, more connections at once than the cap, a reader too slow
// for the host, half-closes both ways, the host closing.
func TestRelay(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			h := relayHandler()
			var written atomic.Int64
			stalled := make(chan struct{})
			h.HandleFunc("/flood", func(w http.ResponseWriter, r *http.Request) {
				chunk := bytes.Repeat(pattern(1<<20), 64) // written in pieces, so that its progress shows
				for ; len(chunk) > 0; chunk = chunk[32<<10:] {
					n, err := w.Write(chunk[:32<<10])
					written.Add(int64(n))
					if err != nil {
						return
					}
				}
			})
			// /stalled answers once the flood's writer, which wrote something, made no progress
			// for a while: what it wrote then is what the way to a reader that reads nothing
			// holds (or less, when the writer was only slow).
			var held int64
			h.HandleFunc("/stalled", func(w http.ResponseWriter, r *http.Request) {
				held = -1
				for n := written.Load(); n != held || n == 0; n = written.Load() {
					held = n
					time.Sleep(300 * time.Millisecond)
				}
				close(stalled)
			})
			halfClosed := make(chan string, 1)
			h.HandleFunc("/half", func(w http.ResponseWriter, r *http.Request) {
				conn, buf, err := w.(http.Hijacker).Hijack()
				if err != nil {
					t.Error(err)
					return
				}
				defer conn.Close()
				buf.WriteString("from the host, then eof\n")
				buf.Flush()
				conn.(interface{ CloseWrite() error }).CloseWrite()
				rest, err := io.ReadAll(buf)
				if err != nil {
					t.Error(err)
				}
				halfClosed <- string(rest)
			})
			h.HandleFunc("/hangup", func(w http.ResponseWriter, r *http.Request) {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
			})
			f := newFixture(t)
			sb, l := startRelay(t, b, f, h)

			t.Run("request", func(t *testing.T) {
				r := runPython(t, sb, `print(call("GET", "/hello"))`)
				if r.Stdout != "(200, b'hello from the host\\n')\n" {
					t.Fatalf("%+v", r)
				}
				r = run(t, sb, fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d && printf 'GET /hello HTTP/1.0\r\n\r\n' >&3 && tail -1 <&3`, testRelayPort))
				if r.Stdout != "hello from the host\n" {
					t.Fatalf("bash's /dev/tcp: %+v", r)
				}
			})
			t.Run("megabytes both ways", func(t *testing.T) {
				const up, down = 24 << 20, 40 << 20
				r := runPython(t, sb, fmt.Sprintf(`
status, data = call("POST", "/echo?n=%d", pattern(%d))
head, _, body = data.partition(b"\n")
print(status, head.decode(), len(body), hashlib.sha256(body).hexdigest())`, down, up))
				want := fmt.Sprintf("200 %d %s %d %s\n", up, sum(pattern(up)), down, sum(pattern(down)))
				if r.Stdout != want {
					t.Fatalf("got %q\nwant %q (%s)", r.Stdout, want, r.Stderr)
				}
			})
			t.Run("more connections than the cap", func(t *testing.T) {
				l.most.Store(0)
				const clients = wire.RelayMaxConns + 16
				r := runPython(t, sb, fmt.Sprintf(`
results = []
def one(i):
    status, data = call("POST", "/echo?n=%%d" %% (100000 + i), pattern(200000 + i))
    head, _, body = data.partition(b"\n")
    results.append(status == 200 and head.split()[0] == b"%%d" %% (200000 + i) and body == pattern(100000 + i))
threads = [threading.Thread(target=one, args=(i,)) for i in range(%d)]
for th in threads: th.start()
for th in threads: th.join()
print(len(results), results.count(True))`, clients))
				if r.Stdout != fmt.Sprintf("%d %d\n", clients, clients) {
					t.Fatalf("%+v", r)
				}
				if most := l.most.Load(); most > wire.RelayMaxConns || most < 2 {
					t.Fatalf("%d connections at once on the host, want 2 to %d", most, wire.RelayMaxConns)
				}
			})
			t.Run("slow reader", func(t *testing.T) {
				r := runPython(t, sb, `
c = http.client.HTTPConnection("127.0.0.1", PORT, timeout=120)
c.request("GET", "/flood")
resp = c.getresponse()
first = resp.read(1)
call("GET", "/stalled")
rest = resp.read()
print(len(first) + len(rest), hashlib.sha256(first + rest).hexdigest())`)
				<-stalled
				if want := fmt.Sprintf("%d %s\n", 64<<20, sum(bytes.Repeat(pattern(1<<20), 64))); r.Stdout != want {
					t.Fatalf("got %q, want %q (%s)", r.Stdout, want, r.Stderr)
				}
				// Stalled, the writer had filled the relay's window and the kernel's socket
				// buffers on the way (a few MiB at most), far from the 64 MiB it had to write.
				if held <= 0 || held > 24<<20 {
					t.Fatalf("the writer stalled after %d bytes, want a few MiB", held)
				}
			})
			t.Run("half-close both ways", func(t *testing.T) {
				r := runPython(t, sb, `
s = socket.create_connection(("127.0.0.1", PORT))
s.sendall(b"GET /half HTTP/1.1\r\nHost: relay\r\n\r\n")
got = b""
while True:
    b = s.recv(65536)
    if not b: break
    got += b
s.sendall(b"from the command after the host's eof")
s.shutdown(socket.SHUT_WR)
print(got.decode().strip())`)
				if r.Stdout != "from the host, then eof\n" {
					t.Fatalf("%+v", r)
				}
				if got := <-halfClosed; got != "from the command after the host's eof" {
					t.Fatalf("the host read %q after its half-close", got)
				}
			})
			t.Run("host closes", func(t *testing.T) {
				r := runPython(t, sb, `
try:
    call("GET", "/hangup")
    print("answered")
except (http.client.HTTPException, OSError) as e:
    print(type(e).__name__)
print(call("GET", "/hello")[0])`)
				if r.Stdout != "RemoteDisconnected\n200\n" {
					t.Fatalf("%+v", r)
				}
			})
		})
	}
}

// TestRelayEpisodeEndsWithConnectionsOpen: the sandbox ends while a command's connection is
// open and the host's end waits on it: the command's Run, the host's read and Accept all
// return, and a write fails.
func TestRelayEpisodeEndsWithConnectionsOpen(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			exe, _ := os.Executable()
			f := newFixture(t)
			sb, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
				Relay: &RelaySpec{Port: testRelayPort}})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			l := RelayOf(sb)
			ran := make(chan error, 1)
			go func() {
				_, err := sb.Run(context.Background(), fmt.Sprintf(`exec 3<>/dev/tcp/127.0.0.1/%d; echo waiting >&3; cat <&3`, testRelayPort), time.Hour)
				ran <- err
			}()
			conn, err := l.Accept()
			if err != nil {
				t.Fatal(err)
			}
			line := make([]byte, 8)
			if _, err := io.ReadFull(conn, line); err != nil || string(line) != "waiting\n" {
				t.Fatalf("read %q, %v", line, err)
			}
			read := make(chan error, 1)
			go func() {
				_, err := conn.Read(make([]byte, 1))
				read <- err
			}()
			sb.Close()
			if err := <-read; err == nil {
				t.Fatal("the host's read of a connection of an ended sandbox returned data")
			}
			<-ran // an error, or the command's result when it ended with its connection first
			if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
				t.Fatalf("Accept after the end = %v, want net.ErrClosed", err)
			}
			if _, err := conn.Write([]byte("late")); err == nil {
				t.Fatal("a write to a connection of an ended sandbox worked")
			}
		})
	}
}

// TestRelayEscapes: with the relay on, a command still reaches nothing but the relay's port:
// no host listener over TCP, no UDP, no DNS, no Unix socket of the host, no other port, and it
// may make no socket but an IPv4 TCP client's, nor bind or listen (so it cannot take the port).
func TestRelayEscapes(t *testing.T) {
	for _, c := range metadataBackends(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.noNS {
				withoutLandlockNamespaces(t)
				exe, _ := os.Executable()
				f := newFixture(t)
				_, err := c.b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
					Relay: &RelaySpec{Port: testRelayPort}})
				if !errors.Is(err, ErrNoRelay) {
					t.Fatalf("a relay from Landlock without a network namespace: %v, want ErrNoRelay", err)
				}
				return
			}
			f := newFixture(t)
			sockets := listenHostUnixSockets(t, f.scratch)
			// A host listener on the relay's own port number, where it is free: a command's
			// connection reaches the guest, never it.
			if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", testRelayPort)); err == nil {
				defer l.Close()
				go func() {
					if c, err := l.Accept(); err == nil {
						t.Error("the host's listener on the relay's port number saw a connection")
						c.Close()
					}
				}()
			}
			sb, _ := startRelay(t, c.b, f, relayHandler())
			assertNoCapabilities(t, sb) // none kept from bringing the loopback up
			assertNoTCPToHost(t, sb)
			assertNoUDPToHost(t, sb)
			assertNoDNS(t, sb)
			sockets.assertUnreachable(t, sb)
			attempts := map[string]string{
				"another port":     fmt.Sprintf(`socket.create_connection(("127.0.0.1", %d), timeout=5)`, testRelayPort+1),
				"another address":  fmt.Sprintf(`socket.create_connection(("10.0.0.1", %d), timeout=5)`, testRelayPort),
				"IPv6":             `socket.socket(socket.AF_INET6, socket.SOCK_STREAM)`,
				"UDP":              `socket.socket(socket.AF_INET, socket.SOCK_DGRAM)`,
				"raw":              `socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)`,
				"netlink":          `socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0)`,
				"packet":           `socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)`,
				"SCTP":             `socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132)`,
				"MPTCP":            `socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)`,
				"Unix":             `socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)`,
				"bind":             `socket.socket().bind(("127.0.0.1", 0))`,
				"bind the relay's": fmt.Sprintf(`socket.socket().bind(("0.0.0.0", %d))`, testRelayPort),
				"listen":           `socket.socket().listen()`,
			}
			for name, code := range attempts {
				r := run(t, sb, "python3 -c 'import socket; "+code+"; print(\"done\")'")
				if strings.Contains(r.Stdout, "done") || r.ExitCode == 0 {
					t.Errorf("%s worked: %+v", name, r)
				}
			}
			// What a client needs still works, after all that.
			r := runPython(t, sb, `print(call("GET", "/hello")[1].decode().strip())`)
			if r.Stdout != "hello from the host\n" {
				t.Fatalf("the relay after the attempts: %+v", r)
			}
		})
	}
}

// TestRelayOffRefusesSockets: without a relay nothing changes: no listener on the host's side,
// and socket(2) refused for TCP too.
func TestRelayOffRefusesSockets(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			if RelayOf(sb) != nil {
				t.Fatal("a relay without asking for one")
			}
			r := run(t, sb, fmt.Sprintf(`python3 -c 'import socket; socket.socket()' 2>&1 | tail -1; exec 3<>/dev/tcp/127.0.0.1/%d`, testRelayPort))
			if !strings.Contains(r.Stdout, "PermissionError") || r.ExitCode == 0 {
				t.Fatalf("%+v", r)
			}
		})
	}
}

// TestRelayRefusedWhereItCannotBeKept: the none sandbox, and a port the guest could not bind
// without privilege, are errors before anything starts.
func TestRelayRefusedWhereItCannotBeKept(t *testing.T) {
	exe, _ := os.Executable()
	f := newFixture(t)
	_, err := None{}.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
		Relay: &RelaySpec{Port: testRelayPort}})
	if !errors.Is(err, ErrNoRelay) {
		t.Fatalf("none with a relay: %v, want ErrNoRelay", err)
	}
	for _, port := range []int{0, 80, 65536} {
		spec := Spec{Scratch: f.scratch, Relay: &RelaySpec{Port: port}}
		if err := spec.defaults(); err == nil || !strings.Contains(err.Error(), "relay port") {
			t.Errorf("port %d: %v", port, err)
		}
	}
}
