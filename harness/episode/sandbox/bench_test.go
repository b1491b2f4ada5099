//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchSpec is a snapshot with a 100 MB table, for per-command costs on real-sized files.
func benchSpec(b *testing.B) Spec {
	b.Helper()
	dir := b.TempDir()
	snap := filepath.Join(dir, "snap")
	if err := os.MkdirAll(snap, 0o755); err != nil {
		b.Fatal(err)
	}
	line := strings.Repeat("2025-12-15 17:24:44.327494932\totel-demo\tcheckout\tok\t", 2) + "\n"
	big := strings.Repeat(line, (100<<20)/len(line))
	if err := os.WriteFile(filepath.Join(snap, "otel_traces_raw.tsv"), []byte(big), 0o644); err != nil {
		b.Fatal(err)
	}
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		b.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	return Spec{Snapshot: snap, Scratch: scratch, Guest: exe, GuestArg: []string{GuestCommand}}
}

// BenchmarkStart measures setting a sandbox up and tearing it down (once per episode).
// docker/first-of-task starts each episode on a task of its own (the snapshot's file linked
// into a new folder), so that each sends its task's files to the daemon, as the first episode
// of each task of a run does; docker, the episodes after it.
func BenchmarkStart(b *testing.B) {
	for _, backend := range backends(b, false) {
		start := func(b *testing.B, spec Spec) {
			s := spec
			s.Scratch = b.TempDir()
			sb, err := backend.Start(context.Background(), s)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := sb.Run(context.Background(), "true", time.Minute); err != nil {
				b.Fatal(err)
			}
			sb.Close()
		}
		b.Run(backend.Name(), func(b *testing.B) {
			spec := benchSpec(b)
			start(b, spec) // the run's first episode, not counted
			for b.Loop() {
				start(b, spec)
			}
		})
		if backend.Name() != NameDocker {
			continue
		}
		b.Run(backend.Name()+"/first-of-task", func(b *testing.B) {
			spec := benchSpec(b)
			start(b, spec) // the run's first episode, not counted
			for b.Loop() {
				b.StopTimer()
				task := filepath.Join(b.TempDir(), "snap")
				table := filepath.Join(spec.Snapshot, "otel_traces_raw.tsv")
				if err := os.Mkdir(task, 0o755); err != nil {
					b.Fatal(err)
				}
				if err := os.Link(table, filepath.Join(task, "otel_traces_raw.tsv")); err != nil {
					b.Fatal(err)
				}
				s := spec
				s.Snapshot = task
				b.StartTimer()
				start(b, s)
			}
		})
	}
}

// BenchmarkCommand measures one command in a warm sandbox, against spawning `bash -c` from Go
// directly on the host (the floor).
func BenchmarkCommand(b *testing.B) {
	for _, cmd := range []struct{ name, line string }{{"true", "true"}, {"grep100MB", "grep -c nomatch otel_traces_raw.tsv"}} {
		b.Run("direct/"+cmd.name, func(b *testing.B) {
			spec := benchSpec(b)
			for b.Loop() {
				c := exec.Command("bash", "-c", cmd.line)
				c.Dir = spec.Snapshot
				c.Run()
			}
		})
		for _, backend := range backends(b, false) {
			b.Run(backend.Name()+"/"+cmd.name, func(b *testing.B) {
				sb, err := backend.Start(context.Background(), benchSpec(b))
				if err != nil {
					b.Fatal(err)
				}
				defer sb.Close()
				for b.Loop() {
					if _, err := sb.Run(context.Background(), cmd.line, time.Minute); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// relayBenchClient times itself (its start-up is not the relay's): requests of /hello one
// after the other on one connection, then 64 MiB up and 64 MiB down on it. It prints the
// seconds per request and the bytes per second each way.
const relayBenchClient = `
import http.client, sys, time
port, n = int(sys.argv[1]), int(sys.argv[2])
c = http.client.HTTPConnection("127.0.0.1", port)
t = time.perf_counter()
for _ in range(n):
    c.request("GET", "/hello")
    c.getresponse().read()
request = (time.perf_counter() - t) / n
body = b"x" * (64 << 20)
t = time.perf_counter()
c.request("POST", "/echo", body)
c.getresponse().read()
up = len(body) / (time.perf_counter() - t)
t = time.perf_counter()
c.request("POST", "/echo?n=%d" % (64 << 20), b"")
r = c.getresponse()
down = 0
while True:
    chunk = r.read(1 << 20)
    if not chunk:
        break
    down += len(chunk)
print(request, up, down / (time.perf_counter() - t))
`

// BenchmarkRelay measures an HTTP request and answer, and 64 MiB each way, from a Python
// client inside the sandbox through the relay to a server on the host, against the same
// client on the host talking to the same server directly on 127.0.0.1.
func BenchmarkRelay(b *testing.B) {
	const requests = 500
	measure := func(b *testing.B, run func() (string, error)) {
		var request, up, down float64
		for b.Loop() {
			out, err := run()
			if err != nil {
				b.Fatal(err)
			}
			var r, u, d float64
			if _, err := fmt.Sscan(out, &r, &u, &d); err != nil {
				b.Fatalf("%v: %q", err, out)
			}
			request, up, down = request+r, up+u, down+d
		}
		n := float64(b.N)
		b.ReportMetric(request/n*1e6, "µs/request")
		b.ReportMetric(up/n/1e6, "MB/s-up")
		b.ReportMetric(down/n/1e6, "MB/s-down")
	}
	b.Run("direct", func(b *testing.B) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		defer l.Close()
		go http.Serve(l, relayHandler())
		port := strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
		measure(b, func() (string, error) {
			out, err := exec.Command("python3", "-c", relayBenchClient, port, strconv.Itoa(requests)).Output()
			return string(out), err
		})
	})
	for _, backend := range backends(b, true) {
		b.Run(backend.Name(), func(b *testing.B) {
			spec := benchSpec(b)
			spec.Relay = &RelaySpec{Port: testRelayPort}
			sb, err := backend.Start(context.Background(), spec)
			if err != nil {
				b.Fatal(err)
			}
			defer sb.Close()
			go http.Serve(RelayOf(sb), relayHandler())
			cmd := fmt.Sprintf("python3 - %d %d <<'PY'\n%s\nPY", testRelayPort, requests, relayBenchClient)
			measure(b, func() (string, error) {
				res, err := sb.Run(context.Background(), cmd, time.Minute)
				if err == nil && res.ExitCode != 0 {
					err = fmt.Errorf("exit %d: %s", res.ExitCode, res.Stderr)
				}
				return res.Stdout, err
			})
		})
	}
}
