//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/image/registry"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// Bwrap isolates with bubblewrap: new mount, pid, network, ipc and uts namespaces; system
// folders read-only; the workspace at /home/user and /tmp are size-bounded tmpfs of the
// sandbox's own (the host sees neither: files are read through the guest), with each
// snapshot file bound read-only into the workspace (no copy of the snapshot); everything dies
// with its parent. A normal user's sandbox is also a user namespace (with no nested one allowed); when
// aa-grade is root there is none (its uid 0 would be host root), and the guest switches to
// nobody instead. Either way the guest then confines itself (wire.Confinement): no capability,
// no socket, no mount, no_new_privs.
type Bwrap struct {
	// Rootfs, when set, is a root file system (an image unpacked by package image) shown
	// read-only as `/` instead of the host's system folders; imageRef is what it came from.
	Rootfs   string
	imageRef string

	once          sync.Once
	path          string
	err           error
	disableUserns bool // this bubblewrap knows --disable-userns (0.8)
}

func (b *Bwrap) Name() string { return NameBwrap }

// Available runs a trivial sandbox once: user namespaces may be disabled even where the
// binary is installed.
func (b *Bwrap) Available() error {
	b.once.Do(func() {
		b.path, b.err = exec.LookPath("bwrap")
		if b.err != nil {
			b.err = fmt.Errorf("bubblewrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)")
			return
		}
		try := func(extra ...string) error {
			args := append(append(append([]string{"--unshare-all", "--die-with-parent"}, extra...), systemBinds()...), "--",
				"/bin/true")
			out, err := exec.Command(b.path, args...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("bubblewrap cannot create namespaces here: %v: %s", err, strings.TrimSpace(string(out)))
			}
			return nil
		}
		if os.Geteuid() == 0 {
			b.err = try()
			return
		}
		b.disableUserns = try("--unshare-user", "--disable-userns") == nil
		if !b.disableUserns {
			b.err = try("--unshare-user")
		}
	})
	return b.err
}

// devBinds makes a read-only /dev of the few devices programs use, with no pty (devpts has
// one pool for the whole host, which one episode could take) and /dev/shm in /tmp, so inside
// the disk limit.
func devBinds() []string {
	args := []string{"--size", "65536", "--perms", "0755", "--tmpfs", "/dev"}
	for _, dev := range []string{"null", "zero", "full", "random", "urandom"} {
		args = append(args, "--dev-bind", "/dev/"+dev, "/dev/"+dev)
	}
	for link, target := range map[string]string{"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
		"stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2", "shm": "/tmp"} {
		args = append(args, "--symlink", target, "/dev/"+link)
	}
	return append(args, "--remount-ro", "/dev")
}

// systemBinds shows the system read-only: /usr, the /bin-style links or folders beside it,
// and only the files of /etc that programs need (never shadow, ssh keys or the like).
func systemBinds() []string {
	args := []string{"--ro-bind", "/usr", "/usr"}
	for _, dir := range systemDirs[1:] {
		info, err := os.Lstat(dir)
		switch {
		case err != nil:
		case info.Mode()&fs.ModeSymlink != 0:
			if target, err := os.Readlink(dir); err == nil {
				args = append(args, "--symlink", target, dir)
			}
		case info.IsDir():
			args = append(args, "--ro-bind", dir, dir)
		}
	}
	// bwrap would make /etc, as a parent of the files bound into it, private to root: as root
	// the commands (nobody) could then read none of them.
	args = append(args, "--perms", "0755", "--dir", "/etc")
	for _, f := range etcFiles {
		if _, err := os.Stat(f); err == nil {
			args = append(args, "--ro-bind", f, f)
		}
	}
	return args
}

// systemDirs are the system folders a sandbox on the host's system shows, /usr first.
var systemDirs = []string{"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"}

// etcFiles are the parts of /etc a shell, coreutils, jq and Python need.
var etcFiles = []string{
	"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives", "/etc/localtime",
	"/etc/nsswitch.conf", "/etc/passwd", "/etc/group", "/etc/bash.bashrc", "/etc/inputrc", "/etc/profile",
	"/etc/mime.types", "/etc/magic", "/etc/python3", "/etc/python3.11",
}

// Start sets up the namespaces and mounts once and starts the guest inside.
func (b *Bwrap) Start(ctx context.Context, spec Spec) (Sandbox, error) {
	if err := b.Available(); err != nil {
		return nil, err
	}
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	limits := spec.Limits
	disk := strconv.FormatInt(limits.disk(), 10)
	var args []string
	if b.Rootfs != "" {
		args = append(args, "--ro-bind", b.Rootfs, "/") // first: the other mounts go over it
	}
	// The guest is the sandbox's pid 1 (no reaper of bubblewrap's, which a command could
	// trace and whose command line names every host path bound), so what holds aa-grade's
	// pipes is filtered and not dumpable.
	args = append(args,
		"--unshare-pid", "--as-pid-1", "--unshare-net", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
		"--die-with-parent", "--new-session", "--hostname", "sandbox", "--proc", "/proc")
	args = append(args, devBinds()...)
	args = append(args, "--size", disk, "--perms", "01777", "--tmpfs", "/tmp")
	c := wire.Confinement{Workdir: ReferenceWorkdir, DropCaps: true, Seccomp: true, KillAll: true,
		RelayPort: spec.relayPort()}
	if os.Geteuid() == 0 {
		// bwrap keeps only what the guest needs to bound the tmpfs' files, hand the workspace
		// to nobody and become it.
		args = append(args, "--cap-drop", "ALL")
		for _, capability := range []string{"CAP_SETUID", "CAP_SETGID", "CAP_SETPCAP", "CAP_CHOWN", "CAP_SYS_ADMIN"} {
			args = append(args, "--cap-add", capability)
		}
		c.RunAs, c.ReadOnlyProc = &wire.IDs{UID: SandboxUID, GID: SandboxGID}, true
		for _, dir := range []string{ReferenceWorkdir, "/tmp"} {
			c.Remount = append(c.Remount, wire.TmpfsLimit{Path: dir, Bytes: limits.disk(), Inodes: limits.inodes()})
		}
	} else {
		// A normal user's bwrap runs the sandbox in a user namespace nested in the one that
		// owns the mounts, so the guest cannot set the tmpfs' file count (bwrap has no option
		// for it): only their size is bounded.
		args = append(args, "--unshare-user")
		if b.disableUserns {
			args = append(args, "--disable-userns")
		}
	}
	if b.Rootfs == "" {
		args = append(args, systemBinds()...)
	}
	args = append(args, "--size", disk, "--perms", "0755", "--tmpfs", ReferenceWorkdir)
	files, err := snapshotFiles(spec.Snapshot, spec.Hide)
	if err != nil {
		return nil, err
	}
	if c.RunAs != nil {
		if err := readableByOthers(files); err != nil {
			return nil, err
		}
	}
	for _, f := range files {
		args = append(args, "--ro-bind", f.host, filepath.Join(ReferenceWorkdir, f.rel))
	}
	for _, p := range spec.shown() {
		if b.Rootfs != "" {
			if err := b.mountPoint(p); err != nil {
				return nil, err
			}
		}
		// bwrap would make the folders on the way private to root, where nobody runs commands.
		var dirs []string
		for dir := filepath.Dir(p.at); dir != "/"; dir = filepath.Dir(dir) {
			dirs = append([]string{"--perms", "0755", "--dir", dir}, dirs...)
		}
		args = append(args, dirs...)
		args = append(args, "--ro-bind", p.host, p.at)
	}
	env := spec.Env
	if env == nil {
		env = CleanEnv(ReferenceWorkdir)
	}
	// The tmpfs' pages are memory too: they get the disk limit on top of the processes' own,
	// so that a full workspace is "No space left on device", not a sandbox out of memory.
	cgroup, err := newSandboxCgroup(limits.memory() + limits.disk())
	if err != nil {
		return nil, err
	}
	c.ProcessesBounded = cgroups().boundsProcesses()
	confine, err := c.Encode()
	if err != nil {
		return nil, errors.Join(err, cgroup.remove())
	}
	env = append(env[:len(env):len(env)], confine)
	guest, err := shownGuest(spec.Guest)
	var covers []string
	if err == nil {
		var system []string
		if b.Rootfs == "" {
			system = systemDirs
		}
		covers, err = spec.guestSeenAt(guest, append(system[:len(system):len(system)], spec.Programs...), AgentDirPath)
	}
	if err != nil {
		return nil, errors.Join(err, cgroup.remove())
	}
	for _, at := range covers {
		args = append(args, "--ro-bind", guest, at)
	}
	args = append(args, "--ro-bind", guest, guestPath, "--chdir", ReferenceWorkdir, "--clearenv")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		args = append(args, "--setenv", k, v)
	}
	args = append(args, "--", guestPath)
	args = append(args, spec.GuestArg...)
	cmd := exec.Command(b.path, args...)
	cmd.Env = env
	s, err := startSession(cmd, ReferenceWorkdir, spec.Guest, cgroup, endNamespace, spec.Relay)
	if err != nil {
		return nil, err
	}
	if spec.AgentDir != "" {
		s.agentDir = AgentDirPath
	}
	return s, nil
}

// mountPoint makes, empty, where p is shown in the unpacked image, as the unpacking makes the
// sandbox's own mount points: bubblewrap cannot make one in the read-only root. It is made
// through os.Root, so that no link of the image leads it out of the image's folder.
func (b *Bwrap) mountPoint(p shownPath) error {
	root, err := os.OpenRoot(b.Rootfs)
	if err != nil {
		return fmt.Errorf("image %s: %w", b.imageRef, err)
	}
	defer func() { _ = root.Close() }() // a folder handle: nothing written through it is pending
	info, err := os.Stat(p.host)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrShownPath, err)
	}
	rel := strings.TrimPrefix(p.at, "/")
	if info.IsDir() {
		err = root.MkdirAll(rel, 0o755)
	} else if err = root.MkdirAll(filepath.Dir(rel), 0o755); err == nil {
		var f *os.File
		if f, err = root.OpenFile(rel, os.O_WRONLY|os.O_CREATE, 0o644); err == nil {
			err = f.Close() // empty: a mount point
		}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: make %s in image %s to show it in: %w", ErrShownPath, p.host, p.at, b.imageRef, err)
	}
	return nil
}

// readableByOthers checks that commands running as nobody (when aa-grade is root) can read
// every snapshot file.
func readableByOthers(files []snapshotFile) error {
	for _, f := range files {
		if f.mode&0o004 == 0 {
			return fmt.Errorf(
				"snapshot file %s is not readable by other users, and the sandbox runs commands as nobody (uid %d) when aa-grade "+
					"is root: make it readable (chmod o+r) or run aa-grade as a normal user", f.host, SandboxUID)
		}
	}
	return nil
}

// linkSnapshot fills a workspace with links to the snapshot files, for the backends that show
// the workspace at its host path.
func linkSnapshot(workspace string, files []snapshotFile) error {
	for _, f := range files {
		link := filepath.Join(workspace, f.rel)
		if err := os.MkdirAll(filepath.Dir(link), 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		if err := os.Symlink(f.host, link); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

// useImage unpacks a `docker save` tarball, an OCI layout folder or an image pulled from a
// registry once, and runs episodes over it.
func (b *Bwrap) useImage(ctx context.Context, ref, cacheDir string, progress func(Event)) error {
	_, statErr := os.Stat(ref)
	reference, refErr := registry.ParseReference(ref)
	if statErr != nil && refErr != nil {
		return fmt.Errorf(
			"with bwrap, the image is a docker save tarball, an OCI layout folder or a registry reference, and %s is none "+
				"(%v; %v); from a daemon: docker save IMAGE -o image.tar", ref, statErr, refErr)
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return err
	}
	var root string
	var err error
	if statErr == nil {
		root, err = image.Unpack(ref, cacheDir)
	} else {
		c := registry.New()
		if progress != nil {
			c.Progress = func(e registry.Event) {
				if p, ok := e.(registry.Pulling); ok {
					progress(PullingImage(p))
				}
			}
		}
		root, _, err = image.Pull(ctx, c, reference, cacheDir)
		if errors.Is(err, registry.ErrUnavailable) {
			err = unavailableError{err}
		}
	}
	if err != nil {
		return err
	}
	b.Rootfs, b.imageRef = root, ref
	// The image must run the guest and have bash: find out now, in one line, before a run
	// starts; its root is of no use then, and goes.
	if err := b.tryImage(ctx); err != nil {
		b.Rootfs, b.imageRef = "", ""
		if ctx.Err() == nil && !errors.Is(err, ErrUnavailable) {
			image.Discard(cacheDir, root)
		}
		return err
	}
	return nil
}

// tryImage starts a sandbox over the image and runs one command: an image that cannot run
// an episode is its reference's error (a failure to start a sandbox at all, the machine's).
func (b *Bwrap) tryImage(ctx context.Context) error {
	sb, stop, err := startEmpty(ctx, b, nil)
	if err != nil {
		return unavailableError{err}
	}
	defer stop()
	guest, _ := os.Executable()
	return tryShell(ctx, sb, b.imageRef, runtime.GOARCH, guest)
}

// image is the tarball or layout the root came from, and the digest its folder is named after.
func (b *Bwrap) image() (string, string) {
	if b.Rootfs == "" {
		return "", ""
	}
	return b.imageRef, strings.Replace(filepath.Base(b.Rootfs), "-", ":", 1)
}
