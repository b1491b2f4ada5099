package kernel

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/unix"
)

// LandlockABI is the Landlock ABI this kernel offers (an error where Landlock is not enabled).
func LandlockABI() (int, error) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(abi), nil
}

// SeccompArch is the seccomp architecture of this build, for which the guest's filter is
// written (an error on the others).
func SeccompArch() (uint32, error) {
	switch runtime.GOARCH {
	case "amd64":
		return unix.AUDIT_ARCH_X86_64, nil
	case "arm64":
		return unix.AUDIT_ARCH_AARCH64, nil
	}
	return 0, fmt.Errorf("the seccomp filter is written for amd64 and arm64, not %s", runtime.GOARCH)
}

// JoinCgroups moves this process, all its threads, into the cgroup folders dirs.
func JoinCgroups(dirs []string) error {
	for _, dir := range dirs {
		// "0" is this process, whatever pid namespace it is in.
		if err := os.WriteFile(filepath.Join(dir, "cgroup.procs"), []byte("0"), 0o644); err != nil {
			return fmt.Errorf("enter cgroup %s: %w", dir, err)
		}
	}
	return nil
}

// CloseInheritedOnExec makes every descriptor above stderr close on exec, so that what this
// process inherited without that flag (a CI runner's files and sockets) never reaches a
// sandbox. Go opens its own descriptors close-on-exec already.
func CloseInheritedOnExec() {
	if err := unix.CloseRange(3, ^uint(0), unix.CLOSE_RANGE_CLOEXEC); err == nil {
		return
	}
	entries, err := os.ReadDir("/proc/self/fd") // kernels before 5.11
	if err != nil {
		return
	}
	for _, e := range entries {
		var fd int
		if _, err := fmt.Sscan(e.Name(), &fd); err == nil && fd > 2 {
			// Fails only for a descriptor no longer open (the one ReadDir read through).
			_, _ = unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}
