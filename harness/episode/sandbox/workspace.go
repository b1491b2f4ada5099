package sandbox

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// ReferenceWorkdir is where the reference sandbox shows the snapshot, and so where bwrap
// shows it.
const ReferenceWorkdir = shellspec.Workdir

// agentPath is where the agent executable appears inside a bwrap sandbox or a container.
const agentPath = "/run/aa-grade/agent"

// snapshotFile is one file shown in the workspace.
type snapshotFile struct {
	rel  string // relative path in the workspace
	host string // the real file (the Hub cache's links resolved)
	mode fs.FileMode
}

// snapshotFiles lists the files of a snapshot, resolved to real files so that only they are
// shown (a cache snapshot is links into a blobs folder that also holds the answer key).
func snapshotFiles(dir string, hide []string) ([]snapshotFile, error) {
	hidden := map[string]bool{}
	for _, h := range hide {
		hidden[filepath.Clean(h)] = true
	}
	var files []snapshotFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if hidden[rel] {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() {
			return nil
		}
		host, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fmt.Errorf("snapshot file %s: %w", rel, err)
		}
		info, err := os.Stat(host)
		if err != nil || !info.Mode().IsRegular() {
			return nil // not a file: not shown
		}
		files = append(files, snapshotFile{rel: rel, host: host, mode: info.Mode()})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("read snapshot %s: %w", dir, err)
	}
	return files, nil
}

// confinementEnv carries the agent's confinement from aa-grade to the agent, which applies it
// to itself and drops the variable before running any command.
const confinementEnv = "AA_GRADE_AGENT_CONFINEMENT" // not AA_GRADE_SANDBOX, which is run --sandbox

// SandboxUID and SandboxGID are who commands run as when aa-grade is root and the backend can
// switch (bwrap): nobody, so that nothing in the sandbox is host root even by accident.
const (
	SandboxUID = 65534
	SandboxGID = 65534
)

// confinement is what the agent does to itself before it serves a command, in this order:
// open the host paths Landlock will allow, mount or bound its tmpfs mounts, make the rest
// read-only, listen on the relay port, take ownership of the workspace for RunAs, empty the
// capability bounding set,
// switch to RunAs, clear every capability, set no_new_privs, restrict files (Landlock),
// install the syscall filter. The isolating backends set all of it that
// applies; none sets nothing.
type confinement struct {
	Workdir string `json:"workdir"`
	// ReadOnlyProc makes everything of /proc but the processes' own folders read-only
	// (sysctls, sysrq-trigger, PSI triggers, ...), where the agent may mount (bwrap as root).
	ReadOnlyProc bool `json:"read_only_proc"`
	// Workspace, where the agent has a mount namespace of its own (Landlock), is a tmpfs it
	// mounts over Workdir, bounded in bytes and files, carrying over what the folder held (the
	// links to the snapshot files, the private temporary folder).
	Workspace *tmpfsLimit `json:"workspace,omitempty"`
	// Binds are files shown read-only in that workspace tmpfs (the snapshot's), bound from the
	// host before anything hides them, so that a RunAs user needs no access to their folders.
	Binds []bindFile `json:"binds,omitempty"`
	// Covers are host files bound read-only over others, where the agent has a mount namespace
	// of its own (Landlock): the agent's copy over aa-grade's executable, where a folder the
	// sandbox shows holds it (see Spec.agentSeenAt).
	Covers []cover `json:"covers,omitempty"`
	// ReadOnlyRoot makes every mount of the agent's mount namespace read-only but the
	// workspace's (and /proc, whose processes' folders stay as the kernel guards them): no
	// chmod, chown, utime or xattr call then reaches a host file, whoever owns it.
	ReadOnlyRoot bool `json:"read_only_root,omitempty"`
	// NoMetadata refuses those calls everywhere, by the syscall filter: for a Landlock agent
	// without a mount namespace, which has no read-only mounts to do it.
	NoMetadata bool `json:"no_metadata,omitempty"`
	// Remount sets the size and file count of tmpfs mounts bwrap made (it can set only the size).
	Remount  []tmpfsLimit `json:"remount,omitempty"`
	RunAs    *ids         `json:"run_as,omitempty"` // switch to these ids (the agent starts as root)
	DropCaps bool         `json:"drop_caps"`
	Seccomp  bool         `json:"seccomp"`
	Landlock *policy      `json:"landlock,omitempty"`
	// ProcessesBounded says a pids cgroup bounds the sandbox's processes; otherwise the agent
	// sets RLIMIT_NPROC, which counts all processes of the user (in the user namespace).
	ProcessesBounded bool `json:"processes_bounded"`
	// KillAll makes the agent kill every process it can signal when it ends: only the
	// sandbox's, since it runs in its own pid namespace or in a signal-scoped Landlock domain.
	KillAll bool `json:"kill_all"`
	// Cgroups are the sandbox's cgroups, which the agent enters before anything else, where
	// it is the sandbox's first process (Landlock): nothing has run outside them yet, and
	// aa-grade need not start a second program to put it there (see sandboxCgroup.enter).
	Cgroups []string `json:"cgroups,omitempty"`
	// RelayPort, when set, is the port of the sandbox's 127.0.0.1 the agent listens on for the
	// relay, before any command runs (so none can take it); the filter then lets commands make
	// TCP client sockets of IPv4, and Landlock lets them connect to that port only.
	RelayPort int `json:"relay_port,omitempty"`

	relay net.Listener // the agent's listener on RelayPort, once it confined itself
}

type tmpfsLimit struct {
	Path   string `json:"path"`
	Bytes  int64  `json:"bytes"`
	Inodes int64  `json:"inodes"`
}

// bindFile is a host file shown at a path relative to the workspace.
type bindFile struct {
	Host string `json:"host"`
	Rel  string `json:"rel"`
}

// cover is a host file bound read-only over another path.
type cover struct {
	Host string `json:"host"`
	At   string `json:"at"`
}

type ids struct {
	UID int `json:"uid"`
	GID int `json:"gid"`
}

// encode is the environment entry that hands the confinement to the agent.
func (c confinement) encode() (string, error) {
	b, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	return confinementEnv + "=" + string(b), nil
}

// maxSandboxProcesses bounds the processes of one sandbox (a fork bomb stops there).
const maxSandboxProcesses = 512

// policy is what a Landlock sandbox may touch.
type policy struct {
	ReadExec  []string `json:"read_exec"`  // system folders: read and execute
	ReadOnly  []string `json:"read_only"`  // files and folders to read (snapshot files, parts of /etc)
	ReadWrite []string `json:"read_write"` // the workspace and a private temporary folder
	Devices   []string `json:"devices"`    // /dev/null and the like: read and write
}
