//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
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
	return Spec{Snapshot: snap, Scratch: scratch, Agent: exe, AgentArg: []string{AgentCommand}}
}

// BenchmarkStart measures setting a sandbox up and tearing it down (once per episode).
func BenchmarkStart(b *testing.B) {
	for _, backend := range backends(b, false) {
		b.Run(backend.Name(), func(b *testing.B) {
			spec := benchSpec(b)
			for b.Loop() {
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
