//go:build linux

package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// readConfinement takes the confinement out of the guest's environment (nil when aa-grade gave
// none: the none backend).
func readConfinement() (*wire.Confinement, error) {
	encoded, ok := os.LookupEnv(wire.ConfinementEnv)
	if !ok {
		return nil, nil
	}
	os.Unsetenv(wire.ConfinementEnv)
	var c wire.Confinement
	if err := json.Unmarshal([]byte(encoded), &c); err != nil {
		return nil, fmt.Errorf("sandbox confinement: %w", err)
	}
	return &c, nil
}

// apply confines the guest as c says, and returns its guard against the OOM killer and its
// listener on the relay port (nil without a relay). Landlock and capabilities bind the calling
// thread and the children it forks: the guest stays on this thread, which starts every
// command. Ids and the seccomp filter apply to all threads.
func apply(c *wire.Confinement) (*oomGuard, net.Listener, error) {
	if err := joinCgroups(c.Cgroups); err != nil {
		return nil, nil, err
	}
	runtime.LockOSThread()
	guard := protectFromOOM()
	relay, err := confine(c)
	return guard, relay, err
}

// confine takes each step of c in its order (see wire.Confinement), and returns the listener
// it opened on the relay port.
func confine(c *wire.Confinement) (relay net.Listener, err error) {
	// Commands may not ptrace the guest or read its memory (it is the same user).
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("not dumpable: %w", err)
	}
	var rules *ruleset
	if c.Landlock != nil {
		// The host paths are opened now: the mounts below may hide them, and RunAs may not
		// reach them.
		if rules, err = newRuleset(*c.Landlock); err != nil {
			return nil, err
		}
		defer rules.close()
	}
	if c.Workspace != nil {
		if err := mountWorkspace(*c.Workspace, c.Binds, c.RunAs); err != nil {
			return nil, err
		}
	}
	for _, cv := range c.Covers {
		if err := unix.Mount(cv.Host, cv.At, "", unix.MS_BIND, ""); err != nil {
			return nil, fmt.Errorf("cover %s: %w", cv.At, err)
		}
		if err := unix.Mount("", cv.At, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, ""); err != nil {
			return nil, fmt.Errorf("cover %s read-only: %w", cv.At, err)
		}
	}
	for _, t := range c.Remount {
		opts := fmt.Sprintf("size=%d,nr_inodes=%d", t.Bytes, t.Inodes)
		if err := unix.Mount("tmpfs", t.Path, "tmpfs", unix.MS_REMOUNT|unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
			return nil, fmt.Errorf("bound %s (%s): %w", t.Path, opts, err)
		}
	}
	if c.ReadOnlyProc {
		if err := readOnlyProc(); err != nil {
			return nil, err
		}
	}
	if c.ReadOnlyRoot {
		if err := readOnlyMounts(c.Workdir); err != nil {
			return nil, err
		}
	}
	if c.RelayPort != 0 {
		// Before the capabilities go (a loopback to bring up), Landlock (which refuses bind)
		// and the filter, and before any command could take the port.
		if relay, err = listenRelay(c.RelayPort); err != nil {
			return nil, err
		}
		if rules != nil {
			if err := rules.allowConnect(c.RelayPort); err != nil {
				return nil, err
			}
		}
	}
	if c.RunAs != nil {
		giveWorkspace(c.Workdir, *c.RunAs)
	}
	if rules != nil {
		// The workspace as the guest now sees it: the tmpfs, where it mounted one.
		if err := rules.allowReadWrite(c.Landlock.ReadWrite); err != nil {
			return nil, err
		}
	}
	if c.DropCaps {
		if err := dropBoundingSet(); err != nil && os.Geteuid() == 0 {
			return nil, err // root can always drop it; a normal user without CAP_SETPCAP cannot
		}
	}
	if c.RunAs != nil {
		if err := switchIDs(*c.RunAs); err != nil {
			return nil, err
		}
	}
	if c.DropCaps {
		if err := clearCapabilities(); err != nil {
			return nil, err
		}
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return nil, fmt.Errorf("no_new_privs: %w", err)
	}
	if rules != nil {
		if err := rules.restrict(); err != nil {
			return nil, err
		}
	}
	if c.Seccomp {
		return relay, installSeccomp(c.NoMetadata, c.RelayPort != 0)
	}
	return relay, nil
}

// mountWorkspace mounts a tmpfs of t's size and file count over the workspace folder t.Path,
// in the guest's own mount namespace (private first, so that nothing mounted here reaches the
// host's mount table), moves what the folder held onto it, binds the files of binds read-only
// into it and makes it the guest's working folder. For an owner (RunAs) the tmpfs is theirs,
// and a folder on the way to it that they could not search is covered by a small tmpfs of
// the folders on that way, so that the workspace's path works for them. The host's folder
// stays as aa-grade made it: aa-grade reads the workspace through the guest, and the tmpfs goes
// with the namespace when the episode's last process ends.
func mountWorkspace(t wire.TmpfsLimit, binds []wire.BindFile, owner *wire.IDs) error {
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
	sources := make([]*os.File, len(binds)) // opened before a tmpfs on the way can hide them
	defer func() {
		for _, f := range sources {
			if f != nil {
				f.Close()
			}
		}
	}()
	for i, b := range binds {
		if sources[i], err = os.OpenFile(b.Host, unix.O_PATH|unix.O_CLOEXEC, 0); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	uid, gid := root.Uid, root.Gid
	if owner != nil {
		uid, gid = uint32(owner.UID), uint32(owner.GID)
		if err := makeSearchable(t.Path, *owner); err != nil {
			return err
		}
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=%o,uid=%d,gid=%d", t.Bytes, t.Inodes, root.Mode&0o7777, uid, gid)
	if err := unix.Mount("tmpfs", t.Path, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, opts); err != nil {
		return fmt.Errorf("workspace tmpfs (%s): %w", opts, err)
	}
	if err := held.write(t.Path); err != nil {
		return err
	}
	for i, b := range binds {
		if err := bindReadOnly(sources[i], filepath.Join(t.Path, b.Rel)); err != nil {
			return fmt.Errorf("workspace: %s: %w", b.Rel, err)
		}
	}
	if err := os.Chdir(t.Path); err != nil { // the old working folder is the one under the tmpfs
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// bindReadOnly shows the open file src at target (made, with its folders), read-only.
func bindReadOnly(src *os.File, target string) error {
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(target, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o444)
	if err != nil {
		return err
	}
	f.Close()
	from := fmt.Sprintf("/proc/self/fd/%d", src.Fd())
	if err := unix.Mount(from, target, "", unix.MS_BIND, ""); err != nil {
		return err
	}
	return unix.Mount("", target, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
}

// makeSearchable covers the first folder on the way to path (from /) that owner cannot search
// with a tmpfs holding only the folders on the rest of the way, path included, searchable by
// all.
func makeSearchable(path string, owner wire.IDs) error {
	var way []string
	for d := filepath.Dir(path); d != "/"; d = filepath.Dir(d) {
		way = append([]string{d}, way...)
	}
	for i, d := range way {
		var st unix.Stat_t
		if err := unix.Stat(d, &st); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if searchable(st, owner) {
			continue
		}
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64k,nr_inodes=256,mode=0755"); err != nil {
			return fmt.Errorf("workspace: a searchable way to it through %s: %w", d, err)
		}
		for _, sub := range append(way[i+1:], path) {
			if err := os.Mkdir(sub, 0o755); err != nil {
				return fmt.Errorf("workspace: %w", err)
			}
		}
		return nil
	}
	return nil
}

// searchable says whether owner may search the folder st, by its mode bits alone (the owner
// has no capability).
func searchable(st unix.Stat_t, owner wire.IDs) bool {
	switch {
	case st.Uid == uint32(owner.UID):
		return st.Mode&0o100 != 0
	case st.Gid == uint32(owner.GID):
		return st.Mode&0o010 != 0
	}
	return st.Mode&0o001 != 0
}

// readOnlyMounts makes every mount the guest sees read-only but the workspace's (what is
// mounted under it is already) and /proc's (the guest keeps its OOM score open there for
// writing, and Landlock or the pid namespace guard it). A mount a tmpfs hides is out of reach,
// and stays as it is.
func readOnlyMounts(workspace string) error {
	info, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return fmt.Errorf("read-only mounts: %w", err)
	}
	attr := unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	for _, line := range strings.Split(strings.TrimSpace(string(info)), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		mp := unescapeMountPath(fields[4])
		if within(mp, "/proc") || within(mp, workspace) {
			continue
		}
		// EACCES: a folder on the way is closed to this user (docker's overlays under
		// /var/lib/docker, mounted while a normal user's episode starts), so the sandbox, which
		// runs as this user with fewer rights, cannot reach the mount either.
		err := unix.MountSetattr(unix.AT_FDCWD, mp, unix.AT_SYMLINK_NOFOLLOW, &attr)
		if err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.EACCES) {
			return fmt.Errorf("read-only %s: %w", mp, err)
		}
	}
	return nil
}

// unescapeMountPath undoes mountinfo's octal escapes (\040 for a space, and the like).
func unescapeMountPath(s string) string {
	if !strings.Contains(s, "\\") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
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
// own sandbox's processes there (and the guest keeps its OOM score writable, see oomGuard).
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
func giveWorkspace(dir string, to wire.IDs) {
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Lchown(p, to.UID, to.GID)
		}
		return nil
	})
}

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
	if errno := onAllThreads(unix.SYS_PRCTL, unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0); errno != 0 && errno != unix.EINVAL {
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

// oomGuard makes the commands the guest starts the OOM killer's first choice (score +1000,
// which anyone may raise), while the guest keeps its own. Without it, an episode that fills
// its memory limit with tmpfs pages, which no process owns, would lose the guest: the largest
// process left. The file stays open because Landlock would refuse opening it again.
type oomGuard struct {
	f    *os.File
	mine string // the guest's own score, restored after each start
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

// start runs start (which forks a command) with the guest's score raised, so that the command
// inherits the raised one, then restores the guest's. (nil: no guard.)
func (g *oomGuard) start(start func() error) error {
	if g == nil {
		return start()
	}
	g.f.WriteAt([]byte("1000"), 0)
	defer g.f.WriteAt([]byte(g.mine), 0)
	return start()
}
