//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// readConfinement takes the confinement out of the agent's environment (nil when aa-grade gave
// none: the none backend).
func readConfinement() (*confinement, error) {
	encoded, ok := os.LookupEnv(confinementEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(confinementEnv)
	var c confinement
	if err := json.Unmarshal([]byte(encoded), &c); err != nil {
		return nil, fmt.Errorf("sandbox confinement: %w", err)
	}
	return &c, nil
}

// apply confines the agent. Landlock and capabilities bind the calling thread and the children
// it forks: the agent stays on this thread, which starts every command. Ids and the seccomp
// filter apply to all threads.
func (c *confinement) apply() (*oomGuard, error) {
	if err := joinCgroups(c.Cgroups); err != nil {
		return nil, err
	}
	runtime.LockOSThread()
	guard := protectFromOOM()
	return guard, c.confine()
}

func (c *confinement) confine() error {
	// Commands may not ptrace the agent or read its memory (it is the same user).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("not dumpable: %w", err)
	}
	if c.Workspace != nil {
		if err := mountWorkspace(*c.Workspace); err != nil {
			return err
		}
	}
	for _, t := range c.Remount {
		opts := fmt.Sprintf("size=%d,nr_inodes=%d", t.Bytes, t.Inodes)
		if err := unix.Mount("tmpfs", t.Path, "tmpfs", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return fmt.Errorf("bound %s (%s): %w", t.Path, opts, err)
		}
	}
	if c.ReadOnlyProc {
		if err := readOnlyProc(); err != nil {
			return err
		}
	}
	if c.RunAs != nil {
		giveWorkspace(c.Workdir, *c.RunAs)
	}
	if c.DropCaps {
		if err := dropBoundingSet(); err != nil && os.Geteuid() == 0 {
			return err // root can always drop it; a normal user without CAP_SETPCAP cannot
		}
	}
	if c.RunAs != nil {
		if err := switchIDs(*c.RunAs); err != nil {
			return err
		}
	}
	if c.DropCaps {
		if err := clearCapabilities(); err != nil {
			return err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if c.Landlock != nil {
		if err := restrictFiles(*c.Landlock); err != nil {
			return err
		}
	}
	if c.Seccomp {
		return installSeccomp()
	}
	return nil
}

// mountWorkspace mounts a tmpfs of t's size and file count over the workspace folder t.Path,
// in the agent's own mount namespace (private first, so that nothing mounted here reaches the
// host's mount table), moves what the folder held onto it and makes it the agent's working
// folder. The host's folder stays as aa-grade made it: aa-grade reads the workspace through
// the agent, and the tmpfs goes with the namespace when the episode's last process ends.
func mountWorkspace(t tmpfsLimit) error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("private mounts: %w", err)
	}
	var root unix.Stat_t
	if err := unix.Stat(t.Path, &root); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	held, err := readTree(t.Path)
	if err != nil {
		return err
	}
	defer held.close()
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%o,uid=%d,gid=%d", t.Bytes, t.Inodes, root.Mode&0o7777, root.Uid, root.Gid)
	if err := unix.Mount("tmpfs", t.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("workspace tmpfs (%s): %w", opts, err)
	}
	if err := held.write(t.Path); err != nil {
		return err
	}
	if err := os.Chdir(t.Path); err != nil { // the old working folder is the one under the tmpfs
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// tree is what a folder holds, read before a mount hides it: folders, links, and regular
// files kept open; not sockets, FIFOs or devices, which are the host's.
type tree []treeEntry

type treeEntry struct {
	rel    string
	mode   fs.FileMode
	target string   // a link's
	file   *os.File // a regular file's, open
}

func readTree(dir string) (tree, error) {
	var t tree
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := treeEntry{rel: rel, mode: info.Mode()}
		switch {
		case d.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if e.target, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if e.file, err = os.Open(p); err != nil {
				return err
			}
		default:
			return nil // a socket, FIFO or device stays the host's, out of reach
		}
		t = append(t, e)
		return nil
	})
	if err != nil {
		t.close()
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return t, nil
}

// write makes the tree again under dir (folders come before what they hold).
func (t tree) write(dir string) error {
	for _, e := range t {
		p := filepath.Join(dir, e.rel)
		var err error
		switch {
		case e.mode.IsDir():
			if err = os.Mkdir(p, 0o700); err == nil {
				err = os.Chmod(p, e.mode.Perm()|e.mode&fs.ModeSticky)
			}
		case e.file != nil:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.mode.Perm()); err == nil {
				_, err = io.Copy(f, e.file)
				err = errors.Join(err, f.Close())
			}
		default:
			err = os.Symlink(e.target, p)
		}
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

func (t tree) close() {
	for _, e := range t {
		if e.file != nil {
			e.file.Close()
		}
	}
}

// readOnlyProc binds each entry of /proc that is not a process's (or a link to one) onto
// itself read-only. The processes' folders stay as they are: a command may change only its
// own sandbox's processes there (and the agent keeps its OOM score writable, see oomGuard).
func readOnlyProc() error {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return fmt.Errorf("read-only /proc: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		if name[0] >= '0' && name[0] <= '9' || e.Type()&fs.ModeSymlink != 0 {
			continue
		}
		p := "/proc/" + name
		if err := unix.Mount(p, p, "", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
		if err := unix.Mount("", p, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
	}
	return nil
}

// giveWorkspace hands the workspace's folders to the sandbox user (the files bound in from the
// snapshot are read-only and stay as they are).
func giveWorkspace(dir string, to ids) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Lchown(p, to.UID, to.GID)
		}
		return nil
	})
}

// dropBoundingSet removes every capability from the bounding set, so that nothing run later
// (a set-user-ID program, a file capability, root's exec) can gain one.
func dropBoundingSet() error {
	for c := 0; c < 64; c++ {
		err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0)
		if errors.Is(err, unix.EINVAL) {
			return nil // past the last capability this kernel knows
		}
		if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	return nil
}

// switchIDs becomes the sandbox user, which also clears the permitted and effective sets.
func switchIDs(to ids) error {
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

// clearCapabilities empties the ambient, inheritable, permitted and effective sets.
func clearCapabilities() error {
	if err := unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
		return fmt.Errorf("clear ambient capabilities: %w", err)
	}
	var data [2]unix.CapUserData
	if err := unix.Capset(&unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}, &data[0]); err != nil {
		return fmt.Errorf("clear capabilities: %w", err)
	}
	return nil
}

// markInheritedCloseOnExec makes every descriptor above stderr close on exec, so that what this
// process inherited without that flag (a CI runner's files and sockets) never reaches a
// sandbox. Go opens its own descriptors close-on-exec already.
func markInheritedCloseOnExec() {
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
			unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC)
		}
	}
}

// oomGuard makes the commands the agent starts the OOM killer's first choice (score +1000,
// which anyone may raise), while the agent keeps its own. Without it, an episode that fills
// its memory limit with tmpfs pages, which no process owns, would lose the agent: the largest
// process left. The file stays open because Landlock would refuse opening it again.
type oomGuard struct {
	f    *os.File
	mine string // the agent's own score, restored after each start
}

func protectFromOOM() *oomGuard {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil // best effort: no /proc
	}
	b := make([]byte, 16)
	n, err := f.ReadAt(b, 0)
	if n == 0 {
		f.Close()
		return nil
	}
	_ = err // io.EOF after the value
	return &oomGuard{f: f, mine: strings.TrimSpace(string(b[:n]))}
}

// start runs start (which forks a command) with the agent's score raised, so that the command
// inherits the raised one, then restores the agent's. (nil: no guard.)
func (g *oomGuard) start(start func() error) error {
	if g == nil {
		return start()
	}
	g.f.WriteAt([]byte("1000"), 0)
	defer g.f.WriteAt([]byte(g.mine), 0)
	return start()
}
