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
const landlockCloneFlags = syscall.CLONE_NEWPID | syscall.CLONE_NEWNET | syscall.CLONE_NEWIPC | syscall.CLONE_NEWUTS

var nsProbe struct {
	once sync.Once
	attr *syscall.SysProcAttr
}

// landlockNamespaces is how a Landlock agent is started into its own namespaces, or nil when
// this machine allows none (a normal user where unprivileged user namespaces are disabled).
// A variable so that tests can take the second path on a machine that allows namespaces.
var landlockNamespaces = probeLandlockNamespaces

// probeLandlockNamespaces tries the namespaces once. Root creates them directly; a normal user
// inside a user namespace of its own, mapping only itself, with CAP_SETPCAP kept so that the
// agent can empty its bounding set.
func probeLandlockNamespaces() *syscall.SysProcAttr {
	nsProbe.once.Do(func() {
		attr := &syscall.SysProcAttr{Cloneflags: landlockCloneFlags}
		if os.Geteuid() != 0 {
			uid, gid := os.Getuid(), os.Getgid()
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: uid, HostID: uid, Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: gid, HostID: gid, Size: 1}}
			attr.AmbientCaps = []uintptr{unix.CAP_SETPCAP}
		}
		probe := exec.Command("/bin/true")
		probe.SysProcAttr = cloneAttr(attr)
		if probe.Run() == nil {
			nsProbe.attr = attr
		}
	})
	if nsProbe.attr == nil {
		return nil
	}
	return cloneAttr(nsProbe.attr)
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
