//go:build linux

package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// CgroupExecCommand is the hidden aa-grade command that enters a sandbox's cgroups and then
// executes the sandbox, so that everything the sandbox starts is counted in them from its
// first instant.
const CgroupExecCommand = "__sandbox-cgroup-exec"

// cgroupRoot is where the cgroup file systems are mounted.
const cgroupRoot = "/sys/fs/cgroup"

// cgroupLayout is how this machine's cgroups can bound a sandbox, found once.
type cgroupLayout struct {
	// parents are the folders under which a sandbox's cgroups are made: the v1 pids and
	// memory hierarchies, or one folder of the v2 hierarchy. Empty: no cgroup can be used.
	parents []string
	v2      bool
	reason  string // why no cgroup (or not every limit) can be used, for doctor
}

var cgroups = sync.OnceValue(func() cgroupLayout { return probed(findCgroups()) })

// probed is layout if a cgroup can be made under each of its parents, else no layout, with the
// reason. Root in a container whose cgroup file system is mounted read-only sees the
// controllers yet can make no cgroup: its sandboxes run without the limits, said so as for a
// normal user, rather than failing every start (a cgroup not made once the probe passed
// does fail the start: newSandboxCgroup).
func probed(layout cgroupLayout) cgroupLayout {
	for _, parent := range layout.parents {
		probe := filepath.Join(parent, fmt.Sprintf("%s%s-probe", leftoverPrefix, ownerTag()))
		err := os.Mkdir(probe, 0o755)
		if err == nil {
			err = os.Remove(probe)
		}
		if err != nil {
			return cgroupLayout{reason: fmt.Sprintf("no cgroup can be made under %s: %v", parent, err)}
		}
	}
	return layout
}

// findCgroups looks for cgroups aa-grade may create: only root may, in the v1 pids and memory
// hierarchies, or in the v2 hierarchy's root with the memory and pids controllers enabled.
// (A normal user's delegated v2 subtree is not used yet.)
func findCgroups() cgroupLayout {
	if os.Geteuid() != 0 {
		return cgroupLayout{reason: "aa-grade is not root, and delegated cgroups are not used yet"}
	}
	var st unix.Statfs_t
	if err := unix.Statfs(cgroupRoot, &st); err != nil {
		return cgroupLayout{reason: fmt.Sprintf("no cgroup file system: %v", err)}
	}
	if st.Type == unix.CGROUP2_SUPER_MAGIC {
		control, _ := os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"))
		var enable error
		if !hasControllers(string(control)) {
			// The root cgroup may enable controllers for its children whatever it holds.
			enable = os.WriteFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"), []byte("+memory +pids"), 0o644)
			control, _ = os.ReadFile(filepath.Join(cgroupRoot, "cgroup.subtree_control"))
		}
		if !hasControllers(string(control)) {
			reason := "the cgroup v2 root does not offer the memory and pids controllers"
			if enable != nil {
				reason += fmt.Sprintf(" (enabling them: %v)", enable)
			}
			return cgroupLayout{reason: reason}
		}
		return cgroupLayout{parents: []string{cgroupRoot}, v2: true}
	}
	var l cgroupLayout
	for _, c := range []string{"pids", "memory"} {
		dir := filepath.Join(cgroupRoot, c)
		if unix.Access(dir, unix.W_OK) != nil {
			l.reason += fmt.Sprintf("no writable cgroup v1 %s hierarchy; ", c)
			continue
		}
		l.parents = append(l.parents, dir)
	}
	l.reason = strings.TrimSuffix(l.reason, "; ")
	return l
}

func hasControllers(control string) bool {
	fields := strings.Fields(control)
	has := func(c string) bool {
		for _, f := range fields {
			if f == c {
				return true
			}
		}
		return false
	}
	return has("memory") && has("pids")
}

// boundsProcesses and boundsMemory say which limits the cgroups here enforce.
func (l cgroupLayout) boundsProcesses() bool { return l.has("pids") }
func (l cgroupLayout) boundsMemory() bool    { return l.has("memory") }

func (l cgroupLayout) has(controller string) bool {
	if l.v2 {
		return len(l.parents) > 0
	}
	for _, p := range l.parents {
		if filepath.Base(p) == controller {
			return true
		}
	}
	return false
}

var cgroupSeq atomic.Int64

// sandboxCgroup is the cgroups of one sandbox: one folder per v1 hierarchy, or one v2 folder.
type sandboxCgroup struct {
	dirs []string
	// byGuest: the guest enters the cgroups itself (wire.Confinement.Cgroups), so the sandbox's
	// process is started as it is.
	byGuest bool
}

// newSandboxCgroup makes the cgroups of one sandbox, bounding its processes, and the memory
// of all of them together, page cache and tmpfs pages included, no swap, to memory bytes.
// It returns nil when this machine offers none (the guarantees say which limit is missing,
// and why: cgroupLayout.reason). Where it offers some, a cgroup or a limit it cannot make is
// an error: the guarantees promise the limit, so the sandbox must not start without it.
func newSandboxCgroup(memory int64) (*sandboxCgroup, error) {
	layout := cgroups()
	if len(layout.parents) == 0 {
		return nil, nil
	}
	name := fmt.Sprintf("%s%s-%d", leftoverPrefix, ownerTag(), cgroupSeq.Add(1))
	cg := &sandboxCgroup{}
	for _, parent := range layout.parents {
		dir := filepath.Join(parent, name)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			cg.dirs = append(cg.dirs, dir)
			err = writeLimits(dir, layout.v2, memory)
		}
		if err != nil {
			return nil, errors.Join(fmt.Errorf("bound the sandbox in a cgroup: %w", err), cg.remove())
		}
	}
	return cg, nil
}

// writeLimits sets the limits a cgroup folder's controller offers.
func writeLimits(dir string, v2 bool, bytes int64) error {
	memory := strconv.FormatInt(bytes, 10)
	type setting struct {
		file, value string
		optional    bool // absent without swap accounting
	}
	var settings []setting
	switch {
	case v2:
		settings = []setting{{"pids.max", strconv.Itoa(wire.MaxProcesses), false}, {"memory.max", memory, false},
			{"memory.swap.max", "0", true}}
	case filepath.Base(filepath.Dir(dir)) == "pids":
		settings = []setting{{"pids.max", strconv.Itoa(wire.MaxProcesses), false}}
	default:
		// memsw (memory and swap together) must not be below the memory limit: written second.
		settings = []setting{{"memory.limit_in_bytes", memory, false}, {"memory.memsw.limit_in_bytes", memory, true}}
	}
	for _, s := range settings {
		err := os.WriteFile(filepath.Join(dir, s.file), []byte(s.value), 0o644)
		if err != nil && !(s.optional && errors.Is(err, os.ErrNotExist)) {
			return fmt.Errorf("cgroup %s: %w", s.file, err)
		}
	}
	return nil
}

// enter makes cmd start inside the cgroups, by running it through
// `<guest> __sandbox-cgroup-exec DIR[:DIR...] PATH ARGS...`.
func (cg *sandboxCgroup) enter(cmd *exec.Cmd, guest string) {
	if cg.byGuest {
		return
	}
	cmd.Args = append([]string{guest, CgroupExecCommand, strings.Join(cg.dirs, ":"), cmd.Path}, cmd.Args[1:]...)
	cmd.Path = guest
}

// joinedByGuest leaves entering the cgroups to the guest, which is the sandbox's first
// process, and returns them for its confinement (nil: no cgroups).
func (cg *sandboxCgroup) joinedByGuest() []string {
	if cg == nil {
		return nil
	}
	cg.byGuest = true
	return cg.dirs
}

// remove kills what is left in the cgroups and removes them (nil: nothing to do).
func (cg *sandboxCgroup) remove() error {
	if cg == nil {
		return nil
	}
	var errs []error
	for _, dir := range cg.dirs {
		errs = append(errs, removeCgroup(dir))
	}
	return errors.Join(errs...)
}

// outOfMemory reports whether the memory limit was hit (the kernel then refused an allocation
// or killed a process of the sandbox).
func (cg *sandboxCgroup) outOfMemory() bool {
	if cg == nil {
		return false
	}
	for _, dir := range cg.dirs {
		if b, err := os.ReadFile(filepath.Join(dir, "memory.events")); err == nil {
			for _, line := range strings.Split(string(b), "\n") {
				if f := strings.Fields(line); len(f) == 2 && (f[0] == "oom" || f[0] == "max") && f[1] != "0" {
					return true
				}
			}
		}
		if b, err := os.ReadFile(filepath.Join(dir, "memory.failcnt")); err == nil &&
			strings.TrimSpace(string(b)) != "0" {
			return true
		}
	}
	return false
}

// removeCgroup kills the processes left in a cgroup and removes it. A v2 cgroup is killed
// whole (cgroup.kill); in v1 the listed processes are killed until none is left.
func removeCgroup(dir string) error {
	// Absent in v1 and before Linux 5.14: the loop below kills the listed processes anyway.
	_ = os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0o644)
	var err error
	wait := 200 * time.Microsecond // the last processes are usually gone within a millisecond
	for range 100 {
		procs, _ := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
		for _, f := range strings.Fields(string(procs)) {
			if pid, perr := strconv.Atoi(f); perr == nil {
				_ = syscall.Kill(pid, syscall.SIGKILL) // gone already, or listed again next round
			}
		}
		if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		time.Sleep(wait)
		wait = min(2*wait, 10*time.Millisecond)
	}
	return err
}

// RunCgroupExec enters the cgroups args[0] (folders joined by ':') and executes args[1] with
// the arguments that follow.
func RunCgroupExec(args []string) error {
	if len(args) < 2 {
		return fmt.Errorf("usage: %s CGROUP[:CGROUP...] PATH [ARG...]", CgroupExecCommand)
	}
	if err := kernel.JoinCgroups(strings.Split(args[0], ":")); err != nil {
		return err
	}
	argv := append([]string{filepath.Base(args[1])}, args[2:]...)
	return syscall.Exec(args[1], argv, os.Environ())
}
