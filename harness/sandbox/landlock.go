package sandbox

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// NameLandlock is the pure-Go backend for machines without user namespaces.
const NameLandlock = "landlock"

// policyEnv carries the agent's restrictions from aa-grade to the agent, which applies them
// to itself and drops the variable before running any command.
const policyEnv = "AA_GRADE_SANDBOX_POLICY"

// policy is what a Landlock sandbox may touch.
type policy struct {
	ReadExec  []string `json:"read_exec"`  // system folders: read and execute
	ReadOnly  []string `json:"read_only"`  // files and folders to read (snapshot files, parts of /etc)
	ReadWrite []string `json:"read_write"` // the workspace and a private temporary folder
	Devices   []string `json:"devices"`    // /dev/null and the like: read and write
}

// Landlock isolates without privileges or namespaces: aa-grade starts itself as the agent,
// which restricts itself with Landlock (read-only system and snapshot files, read-write
// workspace, TCP bind and connect denied, signals and abstract sockets scoped to the sandbox),
// a seccomp filter (no socket but Unix ones, so no UDP or DNS either; no io_uring) and rlimits,
// then serves commands. The workspace is the scratch folder, at its host path, holding links
// to the snapshot files; /proc is out of reach.
type Landlock struct{}

func (Landlock) Name() string { return NameLandlock }

// Available needs Landlock ABI 4 (TCP rules, Linux 6.7).
func (Landlock) Available() error {
	abi, err := landlockABI()
	if err != nil {
		return fmt.Errorf("Landlock is not enabled in this kernel: %v", err)
	}
	if abi < 4 {
		return fmt.Errorf("Landlock ABI %d lacks network rules (needs 4, Linux 6.7)", abi)
	}
	if runtime.GOARCH != "amd64" {
		return fmt.Errorf("the seccomp filter is written for amd64, not %s", runtime.GOARCH)
	}
	return nil
}

func landlockABI() (int, error) {
	abi, _, errno := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if errno != 0 {
		return 0, errno
	}
	return int(abi), nil
}

// Start links the snapshot files into the workspace and starts the agent with its policy.
func (l Landlock) Start(ctx context.Context, spec Spec) (Sandbox, error) {
	if err := l.Available(); err != nil {
		return nil, err
	}
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	files, err := snapshotFiles(spec.Snapshot, spec.Hide)
	if err != nil {
		return nil, err
	}
	tmp := filepath.Join(spec.Scratch, ".tmp")
	if err := os.Mkdir(tmp, 0o700); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	p := policy{ReadWrite: []string{spec.Scratch}, Devices: []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}}
	for _, dir := range []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if _, err := os.Stat(dir); err == nil {
			p.ReadExec = append(p.ReadExec, dir)
		}
	}
	for _, f := range etcFiles {
		if _, err := os.Stat(f); err == nil {
			p.ReadOnly = append(p.ReadOnly, f)
		}
	}
	if err := linkSnapshot(spec.Scratch, files); err != nil {
		return nil, err
	}
	for _, f := range files {
		p.ReadOnly = append(p.ReadOnly, f.host)
	}
	encoded, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	env := spec.Env
	if env == nil {
		env = CleanEnv(spec.Scratch)
	}
	env = append(withTmp(env, tmp), policyEnv+"="+string(encoded))
	cmd := exec.Command(spec.Agent, spec.AgentArg...)
	cmd.Dir, cmd.Env = spec.Scratch, env
	return startSession(cmd, spec.Scratch, spec.Agent)
}

// withTmp points TMPDIR at the sandbox's private temporary folder.
func withTmp(env []string, tmp string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if len(kv) < 7 || kv[:7] != "TMPDIR=" {
			out = append(out, kv)
		}
	}
	return append(out, "TMPDIR="+tmp)
}

// applyPolicy restricts the agent (and so every command it starts) when aa-grade gave it a
// policy. It runs in the agent before any command.
func applyPolicy() error {
	encoded, ok := os.LookupEnv(policyEnv)
	if !ok {
		return nil
	}
	os.Unsetenv(policyEnv)
	var p policy
	if err := json.Unmarshal([]byte(encoded), &p); err != nil {
		return fmt.Errorf("sandbox policy: %w", err)
	}
	// Landlock binds the calling thread (and the children it forks): the agent stays on this
	// thread, which starts every command. The seccomp filter is synchronised to all threads.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := restrictFiles(p); err != nil {
		return err
	}
	return denySockets()
}

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

func restrictFiles(p policy) error {
	abi, err := landlockABI()
	if err != nil {
		return fmt.Errorf("landlock: %w", err)
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
		return fmt.Errorf("landlock ruleset: %w", errno)
	}
	ruleset := int(fd)
	defer unix.Close(ruleset)
	read := uint64(unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR)
	rules := []struct {
		paths  []string
		access uint64
	}{
		{p.ReadExec, read | unix.LANDLOCK_ACCESS_FS_EXECUTE},
		{p.ReadOnly, read},
		{p.ReadWrite, handledFS(abi)},
		{p.Devices, read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | handledFS(abi)&unix.LANDLOCK_ACCESS_FS_TRUNCATE},
	}
	for _, r := range rules {
		for _, path := range r.paths {
			if err := addPathRule(ruleset, path, r.access); err != nil {
				return err
			}
		}
	}
	if _, _, errno := unix.Syscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); errno != 0 {
		return fmt.Errorf("landlock restrict: %w", errno)
	}
	return nil
}

// fileRights are the rights Landlock accepts on a rule for a file (not a folder).
const fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_READ_FILE |
	unix.LANDLOCK_ACCESS_FS_TRUNCATE | unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

func addPathRule(ruleset int, path string, access uint64) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("landlock rule for %s: %w", path, err)
	}
	defer unix.Close(fd)
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

// denySockets installs a seccomp filter: socket(2) for anything but AF_UNIX fails with
// EACCES (no TCP, UDP, raw or netlink socket, so no DNS), and io_uring, which could open
// sockets behind the filter's back, is unavailable.
func denySockets() error {
	const (
		offNr   = 0  // offsetof(struct seccomp_data, nr)
		offArch = 4  // offsetof(struct seccomp_data, arch)
		offArg0 = 16 // offsetof(struct seccomp_data, args[0]), low half on little-endian
		ld      = unix.BPF_LD | unix.BPF_W | unix.BPF_ABS
		jeq     = unix.BPF_JMP | unix.BPF_JEQ | unix.BPF_K
		ret     = unix.BPF_RET | unix.BPF_K
		allow   = unix.SECCOMP_RET_ALLOW
		deny    = unix.SECCOMP_RET_ERRNO | uint32(unix.EACCES)
		nosys   = unix.SECCOMP_RET_ERRNO | uint32(unix.ENOSYS)
	)
	filter := []unix.SockFilter{
		{Code: ld, K: offArch},
		{Code: jeq, K: unix.AUDIT_ARCH_X86_64, Jt: 1},
		{Code: ret, K: deny}, // another architecture's syscall numbers: refuse
		{Code: ld, K: offNr},
		{Code: jeq, K: unix.SYS_IO_URING_SETUP, Jf: 1},
		{Code: ret, K: nosys},
		{Code: jeq, K: unix.SYS_SOCKET, Jf: 3},
		{Code: ld, K: offArg0},
		{Code: jeq, K: unix.AF_UNIX, Jt: 1},
		{Code: ret, K: deny},
		{Code: ret, K: allow},
	}
	prog := unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]}
	if _, _, errno := unix.Syscall(unix.SYS_SECCOMP, unix.SECCOMP_SET_MODE_FILTER, unix.SECCOMP_FILTER_FLAG_TSYNC,
		uintptr(unsafe.Pointer(&prog))); errno != 0 {
		return fmt.Errorf("seccomp: %w", errno)
	}
	return nil
}
