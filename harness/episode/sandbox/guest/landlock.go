//go:build linux

package guest

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// Filesystem rights by Landlock ABI: each ABI adds rights a ruleset can handle.
func handledFS(abi int) uint64 {
	rights := uint64(unix.LANDLOCK_ACCESS_FS_MAKE_SYM<<1 - 1) // ABI 1
	if abi >= 2 {
		rights |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		rights |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		rights |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	return rights
}

// ruleset is a Landlock ruleset being built: the host paths a policy allows are added as soon
// as it is made, the workspace once it is mounted, and restrict applies it to this thread.
type ruleset struct {
	fd  int
	abi int
}

// newRuleset makes the ruleset and adds every rule of p but its read-write folders.
func newRuleset(p wire.Policy) (*ruleset, error) {
	abi, err := kernel.LandlockABI()
	if err != nil {
		return nil, fmt.Errorf("landlock: %w", err)
	}
	attr := unix.LandlockRulesetAttr{Access_fs: handledFS(abi),
		Access_net: unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP}
	size := unsafe.Sizeof(attr)
	if abi >= 6 {
		attr.Scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
	} else {
		size = unsafe.Offsetof(attr.Scoped)
	}
	fd, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if errno != 0 {
		return nil, fmt.Errorf("landlock ruleset: %w", errno)
	}
	r := &ruleset{fd: int(fd), abi: abi}
	read := uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	rules := []struct {
		paths  []string
		access uint64
	}{
		{p.ReadExec, read | unix.LANDLOCK_ACCESS_FS_EXECUTE},
		{p.ReadOnly, read},
		{p.Devices, read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | handledFS(abi)&unix.LANDLOCK_ACCESS_FS_TRUNCATE},
	}
	for _, rule := range rules {
		if err := r.add(rule.paths, rule.access); err != nil {
			r.close()
			return nil, err
		}
	}
	return r, nil
}

// allowReadWrite gives every right on the folders of paths.
func (r *ruleset) allowReadWrite(paths []string) error { return r.add(paths, handledFS(r.abi)) }

func (r *ruleset) add(paths []string, access uint64) error {
	for _, path := range paths {
		if err := addPathRule(r.fd, path, access); err != nil {
			return err
		}
	}
	return nil
}

// allowConnect lets TCP connect to port (the relay's: in the guest's network namespace nothing
// else listens on it). Landlock's port rules name no address.
func (r *ruleset) allowConnect(port int) error {
	attr := landlockNetPortAttr{allowedAccess: unix.LANDLOCK_ACCESS_NET_CONNECT_TCP, port: uint64(port)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(r.fd), landlockRuleNetPort,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule for TCP port %d: %w", port, errno)
	}
	return nil
}

// landlockNetPortAttr is the kernel's struct landlock_net_port_attr (ABI 4), which x/sys lacks.
type landlockNetPortAttr struct {
	allowedAccess uint64
	port          uint64
}

const landlockRuleNetPort = 2 // LANDLOCK_RULE_NET_PORT

// restrict confines this thread, and what it starts, to the ruleset.
func (r *ruleset) restrict() error {
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(r.fd), 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}

// close closes the ruleset's descriptor, whose domain, once restricted to, outlives it.
func (r *ruleset) close() { _ = unix.Close(r.fd) }

// fileRights are the rights Landlock accepts on a rule for a file (not a folder).
const fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
	unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

func addPathRule(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	defer func() { _ = unix.Close(fd) }() // an O_PATH descriptor: nothing to flush
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		access &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: access, Parent_fd: int32(fd)}
	if _, _, errno := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0); errno != 0 {
		return fmt.Errorf("landlock rule for %s: %w", path, errno)
	}
	return nil
}
