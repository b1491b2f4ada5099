//go:build linux

package guest

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
)

// deniedSyscalls fail with EPERM inside an isolating sandbox: mounts and namespaces (no
// remount of a read-only bind, no nested user namespace to gain capabilities in), and kernel
// surfaces a shell investigation never needs and escapes have used (BPF, perf, keyrings,
// userfaultfd, file handles, modules, kexec). Dropped capabilities already refuse most of
// them; the filter holds even where a kernel bug would not.
var deniedSyscalls = []uintptr{
	unix.SYS_MOUNT, unix.SYS_UMOUNT2, unix.SYS_PIVOT_ROOT, unix.SYS_CHROOT, unix.SYS_UNSHARE, unix.SYS_SETNS,
	unix.SYS_MOVE_MOUNT, unix.SYS_OPEN_TREE, unix.SYS_FSOPEN, unix.SYS_FSCONFIG, unix.SYS_FSMOUNT, unix.SYS_FSPICK,
	unix.SYS_MOUNT_SETATTR, unix.SYS_BPF, unix.SYS_PERF_EVENT_OPEN, unix.SYS_KEYCTL, unix.SYS_ADD_KEY,
	unix.SYS_REQUEST_KEY, unix.SYS_USERFAULTFD, unix.SYS_KEXEC_LOAD, unix.SYS_KEXEC_FILE_LOAD, unix.SYS_INIT_MODULE,
	unix.SYS_FINIT_MODULE, unix.SYS_DELETE_MODULE, unix.SYS_REBOOT, unix.SYS_SWAPON, unix.SYS_SWAPOFF, unix.SYS_ACCT,
	unix.SYS_OPEN_BY_HANDLE_AT, unix.SYS_NAME_TO_HANDLE_AT, unix.SYS_SYSLOG, unix.SYS_SETHOSTNAME, unix.SYS_SETDOMAINNAME,
	// Another process of the sandbox (its pid 1, the guest) is never traced, read, written or
	// robbed of a descriptor: whatever holds aa-grade's pipes stays out of a command's reach.
	unix.SYS_PTRACE, unix.SYS_PROCESS_VM_READV, unix.SYS_PROCESS_VM_WRITEV, unix.SYS_PIDFD_GETFD,
	unix.SYS_PROCESS_MADVISE, unix.SYS_KCMP,
}

// metadataSyscalls change a file's mode, owner, times or extended attributes, which Landlock
// does not govern. They are refused where nothing else keeps a command from changing host
// files its user owns: a Landlock guest without a mount namespace, whose system folders are not
// read-only mounts. (Elsewhere the mounts refuse them outside the workspace, and the workspace
// keeps them.)
// (The calls an architecture keeps only for old binaries, amd64's chmod and utime among them,
// are in legacyMetadataSyscalls.)
var metadataSyscalls = append([]uintptr{
	unix.SYS_FCHMOD, unix.SYS_FCHMODAT, unix.SYS_FCHMODAT2,
	unix.SYS_FCHOWN, unix.SYS_FCHOWNAT,
	unix.SYS_UTIMENSAT,
	unix.SYS_SETXATTR, unix.SYS_LSETXATTR, unix.SYS_FSETXATTR, unix.SYS_SETXATTRAT,
	unix.SYS_REMOVEXATTR, unix.SYS_LREMOVEXATTR, unix.SYS_FREMOVEXATTR, unix.SYS_REMOVEXATTRAT,
}, legacyMetadataSyscalls...)

// unavailableSyscalls fail with ENOSYS, so that programs fall back to what the filter can
// inspect: clone3 (glibc then uses clone, whose flags the filter reads) and io_uring (which
// would open sockets and files behind the filter's back).
var unavailableSyscalls = []uintptr{unix.SYS_CLONE3, unix.SYS_IO_URING_SETUP, unix.SYS_IO_URING_ENTER,
	unix.SYS_IO_URING_REGISTER}

// namespaceFlags are the clone flags that make a namespace.
const namespaceFlags = unix.CLONE_NEWNS | unix.CLONE_NEWCGROUP | unix.CLONE_NEWUTS | unix.CLONE_NEWIPC |
	unix.CLONE_NEWUSER | unix.CLONE_NEWPID | unix.CLONE_NEWNET

// x32Bit marks the x32 ABI's system call numbers, which share amd64's audit architecture: the
// filter refuses them all rather than list every call twice.
const x32Bit = 0x40000000

// seccompFilter builds the filter: socket(2) fails with EACCES for every family (no TCP, UDP,
// netlink, and no Unix socket that could connect to a host's docker.sock, D-Bus or tmux;
// socketpair and pipes still work), clone with a namespace flag and deniedSyscalls (and
// metadataSyscalls, when noMetadata) fail with EPERM, unavailableSyscalls with ENOSYS, another
// architecture's calls with EACCES. With relay, socket(2) makes what a TCP client over IPv4
// needs, and only that (see relaySocketRule).
func seccompFilter(noMetadata, relay bool) ([]unix.SockFilter, error) {
	arch, err := kernel.SeccompArch()
	if err != nil {
		return nil, err
	}
	const (
		offNr   = 0  // offsetof(struct seccomp_data, nr)
		offArch = 4  // offsetof(struct seccomp_data, arch)
		offArg0 = 16 // offsetof(struct seccomp_data, args[0]), low half on little-endian
		ld      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		jge     = unix.BPF_JMP | unix.BPF_JGE | unix.BPF_K
		jset    = unix.BPF_JMP | unix.BPF_JSET | unix.BPF_K
		ret     = unix.BPF_RET | unix.BPF_K
		allow   = unix.SECCOMP_RET_ALLOW
		eacces  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		eperm   = unix.SECCOMP_RET_ERRNO | uint32(unix.EPERM)
		enosys  = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	f := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, K: arch, Jt: 1},
		{Code: ret, K: eacces},
		{Code: ld, K: offNr},
	}
	if runtime.GOARCH == "amd64" {
		f = append(f, unix.SockFilter{Code: jge, K: x32Bit, Jf: 1}, unix.SockFilter{Code: ret, K: eacces})
	}
	// Each check: if nr matches, fall through to the return just after it; else skip it.
	denied := deniedSyscalls
	if noMetadata {
		denied = append(denied[:len(denied):len(denied)], metadataSyscalls...)
	}
	for _, nr := range denied {
		f = append(f, unix.SockFilter{Code: jeq, K: uint32(nr), Jf: 1}, unix.SockFilter{Code: ret, K: eperm})
	}
	for _, nr := range unavailableSyscalls {
		f = append(f, unix.SockFilter{Code: jeq, K: uint32(nr), Jf: 1}, unix.SockFilter{Code: ret, K: enosys})
	}
	if relay {
		f = append(f, relaySocketRule()...)
	} else {
		f = append(f, unix.SockFilter{Code: jeq, K: unix.SYS_SOCKET, Jf: 1}, unix.SockFilter{Code: ret, K: eacces})
	}
	f = append(f,
		unix.SockFilter{Code: jeq, K: unix.SYS_CLONE, Jf: 3},
		unix.SockFilter{Code: ld, K: offArg0},
		unix.SockFilter{Code: jset, K: namespaceFlags, Jf: 1},
		unix.SockFilter{Code: ret, K: eperm},
		unix.SockFilter{Code: ret, K: allow},
	)
	return f, nil
}

// relaySocketRule, with the system call's number loaded, lets socket(2) make an IPv4 TCP socket
// (SOCK_STREAM, protocol 0 or TCP: not MPTCP or SCTP) and refuses every other with EACCES, as
// it refuses bind(2) and listen(2): a command may connect, in a network namespace where only the
// guest listens (it listened before the filter), and serve nothing. The arguments are ints,
// of which the kernel reads the low 32 bits, which are what the filter loads.
func relaySocketRule() []unix.SockFilter {
	const (
		offArg0 = 16 // offsetof(struct seccomp_data, args[0]), low half on little-endian
		offArg1 = 24
		offArg2 = 32
		ld      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		and     = unix.BPF_ALU | unix.BPF_AND | unix.BPF_K
		ret     = unix.BPF_RET | unix.BPF_K
		eacces  = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
	)
	return []unix.SockFilter{
		{Code: jeq, K: unix.SYS_BIND, Jf: 1},
		{Code: ret, K: eacces},
		{Code: jeq, K: unix.SYS_LISTEN, Jf: 1},
		{Code: ret, K: eacces},
		{Code: jeq, K: unix.SYS_SOCKET, Jf: 10}, // not socket: on past the rule
		{Code: ld, K: offArg0},
		{Code: jeq, K: unix.AF_INET, Jf: 7}, // to the refusal
		{Code: ld, K: offArg1},
		{Code: and, K: ^uint32(unix.SOCK_NONBLOCK | unix.SOCK_CLOEXEC)},
		{Code: jeq, K: unix.SOCK_STREAM, Jf: 4},
		{Code: ld, K: offArg2},
		{Code: jeq, K: 0, Jt: 1},
		{Code: jeq, K: unix.IPPROTO_TCP, Jf: 1},
		{Code: ret, K: unix.SECCOMP_RET_ALLOW},
		{Code: ret, K: eacces},
	}
}

// installSeccomp applies the filter to every thread of the guest and so to every command.
// no_new_privs must be set first.
func installSeccomp(noMetadata, relay bool) error {
	filter, err := seccompFilter(noMetadata, relay)
	if err != nil {
		return err
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
