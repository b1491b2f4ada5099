//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// landlockCloneFlags are the namespaces a Landlock agent starts in, where it can: in its own
// pid namespace the agent is init, so when it dies the kernel kills everything the episode
// started (however it detached); the others cut it off from the host's network, IPC and name.
// A mount namespace is added where it can be (see probeLandlockNamespaces).
const landlockCloneFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

var nsProbe struct {
	once sync.Once
	attr *syscall.SysProcAttr
}

// landlockNamespaces is how a Landlock agent is started into its own namespaces, or nil when
// this machine allows none (a normal user where unprivileged user namespaces are disabled).
// A variable so that tests can take the second path on a machine that allows namespaces.
var landlockNamespaces = probeLandlockNamespaces

// probeLandlockNamespaces tries the namespaces once, first with a mount namespace (in which
// the agent mounts the workspace as a tmpfs bounded in bytes and files), then without. Root
// creates them directly; a normal user inside a user namespace of its own, mapping only
// itself, with CAP_SETPCAP kept so that the agent can empty its bounding set (and
// CAP_SYS_ADMIN with a mount namespace, so that it can mount the tmpfs; it drops both before
// any command runs).
func probeLandlockNamespaces() *syscall.SysProcAttr {
	nsProbe.once.Do(func() {
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
			probe := exec.Command("/bin/true")
			probe.SysProcAttr = cloneAttr(attr)
			if probe.Run() == nil {
				nsProbe.attr = attr
				return
			}
		}
	})
	if nsProbe.attr == nil {
		return nil
	}
	return cloneAttr(nsProbe.attr)
}

// hasMountNamespace says whether a Landlock agent started with attr has a mount namespace of
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
// Linux 6.12): then the agent's kill(-1) reaches only its own processes.
func landlockScopesSignals() bool {
	abi, err := landlockABI()
	return err == nil && abi >= 6
}
