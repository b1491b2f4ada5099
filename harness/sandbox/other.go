//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"io"
	"os"
	"runtime"
)

// Every backend needs Linux (its namespaces, Landlock, seccomp, cgroups); elsewhere each is
// listed as unavailable, with the reason, and the agent and its helpers refuse to run.

// NameLandlock is the pure-Go Linux backend.
const NameLandlock = "landlock"

// ReferenceWorkdir is where the reference sandbox shows the snapshot.
const ReferenceWorkdir = "/home/user"

// CgroupExecCommand is the hidden aa-grade command that enters a sandbox's cgroups (Linux).
const CgroupExecCommand = "__sandbox-cgroup-exec"

var errNotLinux = fmt.Errorf("needs Linux (this is %s)", runtime.GOOS)

// linuxOnly stands for a backend this platform cannot run.
type linuxOnly struct{ name string }

func (b linuxOnly) Name() string     { return b.name }
func (b linuxOnly) Available() error { return errNotLinux }
func (b linuxOnly) Start(context.Context, Spec) (Sandbox, error) {
	return nil, fmt.Errorf("%w: %s: %v", ErrUnavailable, b.name, errNotLinux)
}

// None runs commands on the bare host: on Linux only, like the agent it starts.
type None struct{}

func (None) Name() string     { return NameNone }
func (None) Available() error { return errNotLinux }
func (None) Start(ctx context.Context, s Spec) (Sandbox, error) {
	return linuxOnly{NameNone}.Start(ctx, s)
}

// Backends lists every backend, none of which runs here.
func Backends() []Backend { return []Backend{linuxOnly{NameBwrap}, linuxOnly{NameLandlock}, None{}} }

// RunAgent is the sandbox agent, which runs only on Linux.
func RunAgent(io.Reader, io.Writer) error { return errNotLinux }

// RunCgroupExec enters cgroups, which exist only on Linux.
func RunCgroupExec([]string) error { return errNotLinux }

// NewScratch makes a fresh folder for an episode's workspace.
func NewScratch() (string, error) { return os.MkdirTemp("", "aa-grade-episode-") }

// CleanLeftovers has nothing to clean where no sandbox runs.
func CleanLeftovers() []string { return nil }

// Guarantees: no backend runs here, so none holds.
func Guarantees(Backend) []Guarantee { return nil }

// LimitsNotEnforced: no backend runs here.
func LimitsNotEnforced(Backend) []Guarantee { return nil }
