//go:build !linux

package sandbox

import (
	"context"
	"fmt"
	"runtime"
)

// Every backend but docker needs Linux (its namespaces, Landlock, seccomp, cgroups); elsewhere
// each is listed as unavailable, with the reason (docker runs a Linux build of aa-grade as
// the guest inside the container).

// NameLandlock is the pure-Go Linux backend.
const NameLandlock = "landlock"

// CgroupExecCommand is the hidden aa-grade command that enters a sandbox's cgroups (Linux).
const CgroupExecCommand = "__sandbox-cgroup-exec"

var errNotLinux = fmt.Errorf("needs Linux (this is %s)", runtime.GOOS)

// IsolationFix is what makes an isolating backend work on a machine that has none: here, only
// docker can.
const IsolationFix = "start Docker (Docker Desktop, or a Podman machine), or set DOCKER_HOST to a daemon"

// linuxOnly stands for a backend this platform cannot run.
type linuxOnly struct{ name string }

func (b linuxOnly) Name() string     { return b.name }
func (b linuxOnly) Available() error { return errNotLinux }
func (b linuxOnly) Start(context.Context, Spec) (Sandbox, error) {
	return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, b.name, errNotLinux)
}

// None runs commands on the bare host: on Linux only, like the guest it starts.
type None struct{}

func (None) Name() string     { return NameNone }
func (None) Available() error { return errNotLinux }
func (None) Start(ctx context.Context, s Spec) (Sandbox, error) {
	return linuxOnly{NameNone}.Start(ctx, s)
}

// Backends lists every backend: here only docker can run.
func Backends() []Backend {
	return []Backend{&Docker{}, linuxOnly{NameBwrap}, linuxOnly{NameLandlock}, None{}}
}

// RunCgroupExec enters cgroups, which exist only on Linux.
func RunCgroupExec([]string) error { return errNotLinux }

// Guarantees: only docker runs here.
func Guarantees(b Backend) []Guarantee {
	if b.Name() == NameDocker && b.Available() == nil {
		return dockerGuarantees()
	}
	return nil
}

// LimitsNotEnforced: docker enforces them all.
func LimitsNotEnforced(Backend) []Guarantee { return nil }

// removeCgroup: there are no cgroups here (cgroupParents is empty).
func removeCgroup(string) error { return nil }
