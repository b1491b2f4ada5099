//go:build linux

package sandbox

import (
	"context"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// landlockCloneFlags are the namespaces a Landlock guest starts in, where it can: in its own
// pid namespace the guest is init, so when it dies the kernel kills everything the episode
// started (however it detached); the others cut it off from the host's network, IPC and name.
// A mount namespace is added where it can be (see probeLandlockNamespaces).
const landlockCloneFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

var nsProbe struct {
	once sync.Once
	attr *syscall.SysProcAttr
}

// landlockNamespaces is how a Landlock guest is started into its own namespaces, or nil when
// this machine allows none (a normal user where unprivileged user namespaces are disabled).
// A variable so that tests can take the second path on a machine that allows namespaces.
var landlockNamespaces = probeLandlockNamespaces

// probeLandlockNamespaces finds the namespaces once, with this executable as the guest (as
// aa-grade, and the test binaries that double as it, start it).
func probeLandlockNamespaces() *syscall.SysProcAttr {
	nsProbe.once.Do(func() {
		if exe, err := os.Executable(); err == nil {
			nsProbe.attr = findLandlockNamespaces(exe, []string{GuestCommand})
		}
	})
	if nsProbe.attr == nil {
		return nil
	}
	return cloneAttr(nsProbe.attr)
}

// findLandlockNamespaces tries the namespaces, first with a mount namespace, in which the
// guest (guest args...) must manage to mount a workspace tmpfs as it will at each start
// (a security module may refuse mount even where the namespace can be made), then without.
// Root creates them directly; a normal user inside a user namespace of its own, mapping only
// itself, with CAP_SETPCAP kept so that the guest can empty its bounding set (and
// CAP_SYS_ADMIN with a mount namespace, so that it can mount the tmpfs; it drops both before
// any command runs). It returns nil when no namespace can be made.
func findLandlockNamespaces(guest string, args []string) *syscall.SysProcAttr {
	for _, flags := range []uintptr{landlockCloneFlags | syscall.CLONE_NEWNS, landlockCloneFlags} {
		attr := &syscall.SysProcAttr{Cloneflags: flags}
		if os.Geteuid() != 0 {
			uid, gid := os.Getuid(), os.Getgid()
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.AmbientCaps = []uintptr{unix.CAP_SETPCAP}
			if flags&syscall.CLONE_NEWNS != 0 {
				attr.AmbientCaps = append(attr.AmbientCaps, unix.CAP_SYS_ADMIN)
			}
		}
		var err error
		if hasMountNamespace(attr) {
			err = probeWorkspaceMount(guest, args, attr)
		} else {
			probe := exec.Command("/bin/true")
			probe.SysProcAttr = cloneAttr(attr)
			err = probe.Run()
		}
		if err == nil {
			return attr
		}
	}
	return nil
}

// probeWorkspaceMount starts the guest in the namespaces of attr with only a workspace tmpfs
// to mount over a fresh folder, and no input: it mounts it and ends, or fails.
func probeWorkspaceMount(guest string, args []string, attr *syscall.SysProcAttr) error {
	dir, err := os.MkdirTemp("", "aa-grade-probe-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // an empty folder in the temporary folder
	// As at each start: the workspace, a way to it nobody can search as root, the rest read-only.
	c := wire.Confinement{Workdir: dir, Workspace: &wire.TmpfsLimit{Path: dir, Bytes: 1 << 20, Inodes: 64},
		ReadOnlyRoot: true}
	if os.Geteuid() == 0 {
		c.RunAs = &wire.IDs{UID: SandboxUID, GID: SandboxGID}
	}
	confine, err := c.Encode()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	probe := exec.CommandContext(ctx, guest, args...)
	probe.Dir, probe.Env, probe.SysProcAttr = dir, []string{confine}, cloneAttr(attr)
	probe.SysProcAttr.Pdeathsig = syscall.SIGKILL
	return probe.Run()
}

// hasMountNamespace says whether a Landlock guest started with attr has a mount namespace of
// its own, and so a workspace bounded in bytes and files.
func hasMountNamespace(attr *syscall.SysProcAttr) bool {
	return attr != nil && attr.Cloneflags&syscall.CLONE_NEWNS != 0
}

// cloneAttr copies a SysProcAttr, which exec fills in as it starts a process.
func cloneAttr(a *syscall.SysProcAttr) *syscall.SysProcAttr {
	c := *a
	return &c
}

// landlockScopesSignals reports whether Landlock confines signals to the sandbox (ABI 6,
// Linux 6.12): then the guest's kill(-1) reaches only its own processes.
func landlockScopesSignals() bool {
	abi, err := kernel.LandlockABI()
	return err == nil && abi >= 6
}
