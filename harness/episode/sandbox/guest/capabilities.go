//go:build linux

package guest

import (
	"fmt"
	"runtime"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// dropBoundingSet removes every capability from the bounding set of every thread, so that
// nothing run later (a set-user-ID program, a file capability, root's exec) can gain one.
func dropBoundingSet() error {
	for c := 0; c < 64; c++ {
		errno := onAllThreads(unix.SYS_PRCTL, unix.PR_CAPBSET_DROP, uintptr(c), 0)
		if errno == unix.EINVAL {
			return nil // past the last capability this kernel knows
		}
		if errno != 0 {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, errno)
		}
	}
	return nil
}

// switchIDs becomes the sandbox user, which also clears the permitted and effective sets (Go
// changes the ids of every thread).
func switchIDs(to wire.IDs) error {
	if err := syscall.Setgroups(nil); err != nil {
		return fmt.Errorf("drop supplementary groups: %w", err)
	}
	if err := syscall.Setresgid(to.GID, to.GID, to.GID); err != nil {
		return fmt.Errorf("switch to gid %d: %w", to.GID, err)
	}
	if err := syscall.Setresuid(to.UID, to.UID, to.UID); err != nil {
		return fmt.Errorf("switch to uid %d: %w", to.UID, err)
	}
	return nil
}

// clearCapabilities empties the ambient, inheritable, permitted and effective sets of every
// thread: none of the guest's threads keeps what it needed to set the sandbox up.
func clearCapabilities() error {
	if errno := onAllThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); errno != 0 &&
		errno != unix.EINVAL {
		return fmt.Errorf("clear ambient capabilities: %w", errno)
	}
	header := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	errno := onAllThreads(unix.SYS_CAPSET, uintptr(unsafe.Pointer(&header)), uintptr(unsafe.Pointer(&data[0])), 0)
	runtime.KeepAlive(&header)
	runtime.KeepAlive(&data)
	if errno != 0 {
		return fmt.Errorf("clear capabilities: %w", errno)
	}
	return nil
}

// onAllThreads makes a system call on every thread of the guest, since capabilities are per
// thread. A build with cgo (the race detector's) cannot: there it is this thread's only, and
// the ids switch (which libc makes on every thread) is what clears the others' capabilities.
func onAllThreads(trap, a1, a2, a3 uintptr) syscall.Errno {
	_, _, errno := syscall.AllThreadsSyscall(trap, a1, a2, a3)
	if errno == syscall.ENOTSUP {
		_, _, errno = syscall.RawSyscall(trap, a1, a2, a3)
	}
	return errno
}
