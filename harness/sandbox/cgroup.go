package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// CgroupExecCommand is the hidden aa-grade command that enters a cgroup and then executes the
// sandbox, so that everything the sandbox starts is counted in that cgroup from its first
// instant.
const CgroupExecCommand = "__sandbox-cgroup-exec"

// maxSandboxProcesses bounds the processes of one sandbox (a fork bomb stops there).
const maxSandboxProcesses = 512

// pidsHierarchy is the cgroup v1 pids controller, where root can bound a sandbox's processes:
// RLIMIT_NPROC, which bounds everybody else, does not bind root.
const pidsHierarchy = "/sys/fs/cgroup/pids"

var cgroupSeq atomic.Int64

// newPidsCgroup, when aa-grade runs as root and the pids controller is writable, makes a fresh
// cgroup limited to maxSandboxProcesses for one sandbox. It returns its folder, to remove
// once the sandbox is gone ("" when no cgroup can be used).
func newPidsCgroup() string {
	if os.Geteuid() != 0 {
		return ""
	}
	dir := filepath.Join(pidsHierarchy, fmt.Sprintf("%s%s-%d", leftoverPrefix, ownerTag(), cgroupSeq.Add(1)))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return ""
	}
	if err := os.WriteFile(filepath.Join(dir, "pids.max"), []byte(strconv.Itoa(maxSandboxProcesses)), 0o644); err != nil {
		os.Remove(dir)
		return ""
	}
	return dir
}

// enterCgroup makes cmd start inside the cgroup dir, by running it through
// `<agent> __sandbox-cgroup-exec DIR PATH ARGS...`.
func enterCgroup(cmd *exec.Cmd, agent, dir string) {
	cmd.Args = append([]string{agent, CgroupExecCommand, dir, cmd.Path}, cmd.Args[1:]...)
	cmd.Path = agent
}

// RunCgroupExec enters the cgroup args[0] and executes args[1] with the arguments that follow.
func RunCgroupExec(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: %s CGROUP PATH [ARG...]", CgroupExecCommand)
	}
	// "0" is this process, whatever pid namespace it is in.
	if err := os.WriteFile(filepath.Join(args[0], "cgroup.procs"), []byte("0"), 0o644); err != nil {
		return fmt.Errorf("enter cgroup: %w", err)
	}
	argv := append([]string{filepath.Base(args[1])}, args[2:]...)
	return syscall.Exec(args[1], argv, os.Environ())
}
