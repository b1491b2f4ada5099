// Package guesttest lets a test binary double as the sandbox guest, as aa-grade does: a test
// that starts sandboxes calls Main from its TestMain.
package guesttest

import (
	"fmt"
	"os"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/guest"
)

// Main serves as the guest (or enters a sandbox's cgroup) when the binary was started for
// that, and runs the tests otherwise.
func Main(m *testing.M) {
	if len(os.Args) > 1 {
		switch os.Args[1] {
		case sandbox.GuestCommand:
			if err := guest.Run(os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
			os.Exit(0)
		case sandbox.CgroupExecCommand:
			fmt.Fprintln(os.Stderr, sandbox.RunCgroupExec(os.Args[2:]))
			os.Exit(1)
		}
	}
	os.Exit(m.Run())
}

// Backend is the strongest sandbox that works here; under CI an isolating one must, elsewhere
// the test falls back to none.
func Backend(t testing.TB) sandbox.Backend {
	t.Helper()
	b, err := sandbox.Select(sandbox.NameAuto)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		return sandbox.None{}
	}
	t.Cleanup(func() { sandbox.Release(b) }) // after the sandboxes' own cleanups, registered later
	return b
}

// Backends are the backends that work here, each ready to start: the docker one runs the
// image AA_GRADE_TEST_IMAGE names (CI builds it from Debian packages) and is left out without.
func Backends(t testing.TB) []sandbox.Backend {
	t.Helper()
	var out []sandbox.Backend
	for _, b := range sandbox.Backends() {
		if d, ok := b.(*sandbox.Docker); ok {
			if d.Image = os.Getenv("AA_GRADE_TEST_IMAGE"); d.Image == "" {
				continue
			}
		}
		if b.Available() == nil {
			t.Cleanup(func() { sandbox.Release(b) })
			out = append(out, b)
		}
	}
	return out
}
