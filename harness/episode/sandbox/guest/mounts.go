//go:build linux

package guest

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

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
				_ = f.Close() // O_PATH: nothing to flush
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
	if err := f.Close(); err != nil { // empty: a mount point
		return err
	}
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
		if err := unix.Mount("tmpfs", d, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
			"size=64k,nr_inodes=256,mode=0755"); err != nil {
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
		if kernel.Within(mp, "/proc") || kernel.Within(mp, workspace) {
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
		flags := uintptr(unix.MS_BIND | unix.MS_REMOUNT | unix.MS_RDONLY | unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC)
		if err := unix.Mount("", p, "", flags, ""); err != nil {
			return fmt.Errorf("read-only %s: %w", p, err)
		}
	}
	return nil
}

// giveWorkspace hands the workspace's folders to the sandbox user (the files bound in from the
// snapshot are read-only and stay as they are). A folder it cannot hand over fails the start:
// the model could not write in it, and an episode without its submission would be scored as
// the model's failure rather than retried as the sandbox's. Every folder is listed before any
// is handed over, the deepest first: the guest keeps no capability to read or search a folder
// it no longer owns, and bwrap makes the folders on the way to a bound file private (0700).
func giveWorkspace(dir string, to wire.IDs) error {
	var dirs []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			dirs = append(dirs, p)
		}
		return err
	})
	for i := len(dirs) - 1; i >= 0 && err == nil; i-- {
		err = os.Lchown(dirs[i], to.UID, to.GID)
	}
	if err != nil {
		return fmt.Errorf("hand the workspace to the sandbox user: %w", err)
	}
	return nil
}
