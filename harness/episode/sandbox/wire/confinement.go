package wire

import "encoding/json"

// ConfinementEnv carries the guest's Confinement from aa-grade to the guest, which applies it
// to itself and drops the variable before running any command.
const ConfinementEnv = "AA_GRADE_GUEST_CONFINEMENT" // not AA_GRADE_SANDBOX, which is run --sandbox

// Confinement is what the guest does to itself before it serves a command, in this order:
// open the host paths Landlock will allow, mount or bound its tmpfs mounts, make the rest
// read-only, listen on the relay port, take ownership of the workspace for RunAs, empty the
// capability bounding set,
// switch to RunAs, clear every capability, set no_new_privs, restrict files (Landlock),
// install the syscall filter. The isolating backends set all of it that
// applies; none sets nothing.
type Confinement struct {
	Workdir string `json:"workdir"`
	// ReadOnlyProc makes everything of /proc but the processes' own folders read-only
	// (sysctls, sysrq-trigger, PSI triggers, ...), where the guest may mount (bwrap as root).
	ReadOnlyProc bool `json:"read_only_proc"`
	// Workspace, where the guest has a mount namespace of its own (Landlock), is a tmpfs it
	// mounts over Workdir, bounded in bytes and files, carrying over what the folder held (the
	// links to the snapshot files, the private temporary folder).
	Workspace *TmpfsLimit `json:"workspace,omitempty"`
	// Binds are files shown read-only in that workspace tmpfs (the snapshot's), bound from the
	// host before anything hides them, so that a RunAs user needs no access to their folders.
	Binds []BindFile `json:"binds,omitempty"`
	// Covers are host files bound read-only over others, where the guest has a mount namespace
	// of its own (Landlock): the guest's copy over aa-grade's executable, where a folder the
	// sandbox shows holds it.
	Covers []Cover `json:"covers,omitempty"`
	// ReadOnlyRoot makes every mount of the guest's mount namespace read-only but the
	// workspace's (and /proc, whose processes' folders stay as the kernel guards them): no
	// chmod, chown, utime or xattr call then reaches a host file, whoever owns it.
	ReadOnlyRoot bool `json:"read_only_root,omitempty"`
	// NoMetadata refuses those calls everywhere, by the syscall filter: for a Landlock guest
	// without a mount namespace, which has no read-only mounts to do it.
	NoMetadata bool `json:"no_metadata,omitempty"`
	// Remount sets the size and file count of tmpfs mounts bwrap made (it can set only the size).
	Remount  []TmpfsLimit `json:"remount,omitempty"`
	RunAs    *IDs         `json:"run_as,omitempty"` // switch to these ids (the guest starts as root)
	DropCaps bool         `json:"drop_caps"`
	Seccomp  bool         `json:"seccomp"`
	Landlock *Policy      `json:"landlock,omitempty"`
	// ProcessesBounded says a pids cgroup bounds the sandbox's processes; otherwise the guest
	// sets RLIMIT_NPROC, which counts all processes of the user (in the user namespace).
	ProcessesBounded bool `json:"processes_bounded"`
	// KillAll makes the guest kill every process it can signal when it ends: only the
	// sandbox's, since it runs in its own pid namespace or in a signal-scoped Landlock domain.
	KillAll bool `json:"kill_all"`
	// Cgroups are the sandbox's cgroups, which the guest enters before anything else, where
	// it is the sandbox's first process (Landlock): nothing has run outside them yet, and
	// aa-grade need not start a second program to put it there (its cgroup exec command).
	Cgroups []string `json:"cgroups,omitempty"`
	// RelayPort, when set, is the port of the sandbox's 127.0.0.1 the guest listens on for the
	// relay, before any command runs (so none can take it); the filter then lets commands make
	// TCP client sockets of IPv4, and Landlock lets them connect to that port only.
	RelayPort int `json:"relay_port,omitempty"`
}

// TmpfsLimit is a tmpfs mount at Path and what it may hold.
type TmpfsLimit struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	Inodes int64  `json:"inodes"`
}

// BindFile is a host file shown at a path relative to the workspace.
type BindFile struct {
	Host string `json:"host"`
	Rel  string `json:"rel"`
}

// Cover is a host file bound read-only over another path.
type Cover struct {
	Host string `json:"host"`
	At   string `json:"at"`
}

// IDs are a user and a group.
type IDs struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// Encode is the environment entry that hands the confinement to the guest.
func (c Confinement) Encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return ConfinementEnv + "=" + string(b), nil
}

// MaxProcesses bounds the processes of one sandbox (a fork bomb stops there): aa-grade's pids
// cgroup or container limit, else the guest's RLIMIT_NPROC.
const MaxProcesses = 512

// Policy is what a Landlock sandbox may touch, which the guest makes its ruleset of.
type Policy struct {
	ReadExec  []string `json:"read_exec"`  // system folders: read and execute
	ReadOnly  []string `json:"read_only"`  // files and folders to read (snapshot files, parts of /etc)
	ReadWrite []string `json:"read_write"` // the workspace and a private temporary folder
	Devices   []string `json:"devices"`    // /dev/null and the like: read and write
}
