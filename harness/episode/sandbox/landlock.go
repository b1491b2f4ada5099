//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// NameLandlock is the pure-Go backend for machines without user namespaces.
const NameLandlock = "landlock"

// Landlock isolates without bubblewrap: aa-grade starts itself as the guest, which confines
// itself (see wire.Confinement) with Landlock (read-only system and snapshot files, read-write
// workspace, TCP bind and connect denied, signals and abstract sockets scoped to the sandbox),
// the seccomp filter (no socket at all, no mount, no namespace), no capabilities and rlimits,
// then serves commands. Where the machine allows (root, or unprivileged user namespaces) the
// guest also starts in its own pid, network, IPC, UTS and mount namespaces, so that everything
// an episode starts dies with it, and mounts a tmpfs bounded in bytes and files over its
// workspace. The workspace is the scratch folder, at its host path, holding links to the
// snapshot files and the private temporary folder; /proc is out of reach.
type Landlock struct{}

func (Landlock) Name() string { return NameLandlock }

// Available needs Landlock ABI 4 (TCP rules, Linux 6.7).
func (Landlock) Available() error {
	abi, err := kernel.LandlockABI()
	if err != nil {
		return fmt.Errorf("Landlock is not enabled in this kernel: %w", err)
	}
	if abi < 4 {
		return fmt.Errorf("Landlock ABI %d lacks network rules (needs 4, Linux 6.7)", abi)
	}
	_, err = kernel.SeccompArch()
	return err
}

// Start links the snapshot files into the workspace and starts the guest with its policy.
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
	p := wire.Policy{ReadWrite: []string{spec.Scratch},
		Devices: []string{"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom"}}
	for _, dir := range systemDirs {
		if _, err := os.Stat(dir); err == nil {
			p.ReadExec = append(p.ReadExec, dir)
		}
	}
	for _, f := range etcFiles {
		if _, err := os.Stat(f); err == nil {
			p.ReadOnly = append(p.ReadOnly, f)
		}
	}
	for _, f := range files {
		p.ReadOnly = append(p.ReadOnly, f.host)
	}
	// What a sandbox with a mount namespace would bind is shown here at its host path.
	p.ReadExec = append(p.ReadExec, spec.Programs...)
	if spec.AgentDir != "" {
		p.ReadExec = append(p.ReadExec, spec.AgentDir)
	}
	ns := landlockNamespaces()
	if spec.Relay != nil {
		if ns == nil {
			// Landlock's port rules name no address: a connect rule for the port would reach
			// that port of every host, and a listener on the host's 127.0.0.1 every user.
			return nil, fmt.Errorf(
				"%w: Landlock has no network namespace of its own on this machine (it needs root or unprivileged user "+
					"namespaces); use bwrap or docker", ErrNoRelay)
		}
		if os.Geteuid() != 0 {
			ns.AmbientCaps = append(ns.AmbientCaps[:len(ns.AmbientCaps):len(ns.AmbientCaps)],
				unix.CAP_NET_ADMIN) // to bring the namespace's loopback up
		}
	}
	c := wire.Confinement{Workdir: spec.Scratch, DropCaps: true, Seccomp: true, Landlock: &p,
		KillAll: ns != nil ||
			landlockScopesSignals(), ProcessesBounded: cgroups().boundsProcesses(), RelayPort: spec.relayPort()}
	memory := spec.Limits.memory()
	guest, err := shownGuest(spec.Guest)
	if err != nil {
		return nil, err
	}
	covers, err := spec.guestSeenAt(guest, p.ReadExec, "")
	switch {
	case err != nil:
		return nil, err
	case len(covers) > 0 && !hasMountNamespace(ns):
		return nil, fmt.Errorf(
			"%w: %s lies in a folder this Landlock sandbox shows, and without a mount namespace it cannot show its copy there "+
				"instead: run aa-grade from another folder, or use bwrap or docker", ErrConcealed, covers[0])
	}
	for _, at := range covers {
		c.Covers = append(c.Covers, wire.Cover{Host: guest, At: at})
	}
	if hasMountNamespace(ns) {
		// One tmpfs holds the workspace and the temporary folder in it, with the snapshot files
		// bound into it; everything else is read-only. Its pages are memory too: they get the
		// disk limit on top of the processes' own, as in bwrap. As root, commands run as
		// nobody, as in bwrap.
		c.Workspace = &wire.TmpfsLimit{Path: spec.Scratch, Bytes: spec.Limits.disk(), Inodes: spec.Limits.inodes()}
		c.ReadOnlyRoot = true
		for _, f := range files {
			c.Binds = append(c.Binds, wire.BindFile{Host: f.host, Rel: f.rel})
		}
		if os.Geteuid() == 0 {
			if err := readableByOthers(files); err != nil {
				return nil, err
			}
			c.RunAs = &wire.IDs{UID: SandboxUID, GID: SandboxGID}
		}
		memory += spec.Limits.disk()
	} else {
		// No read-only mount keeps a command from changing the mode, owner, times or
		// attributes of a host file its user owns: the filter refuses those calls.
		c.NoMetadata = true
		if err := linkSnapshot(spec.Scratch, files); err != nil {
			return nil, err
		}
	}
	cgroup, err := newSandboxCgroup(memory)
	if err != nil {
		return nil, err
	}
	c.Cgroups = cgroup.joinedByGuest()
	confine, err := c.Encode()
	if err != nil {
		return nil, errors.Join(err, cgroup.remove())
	}
	env := spec.Env
	if env == nil {
		env = CleanEnv(spec.Scratch)
	}
	env = append(withTmp(env, tmp), confine)
	cmd := exec.Command(guest, spec.GuestArg...)
	cmd.Dir, cmd.Env, cmd.SysProcAttr = spec.Scratch, env, ns
	end := endWalk
	switch {
	case ns != nil:
		end = endNamespace
	case c.KillAll:
		end = endGuestKillsAll
	}
	s, err := startSession(cmd, spec.Scratch, spec.Guest, cgroup, end, spec.Relay)
	if err != nil {
		return nil, err
	}
	s.agentDir = spec.AgentDir
	return s, nil
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
