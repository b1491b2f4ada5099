//go:build linux

package guest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"runtime"

	"golang.org/x/sys/unix"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// readConfinement takes the confinement out of the guest's environment (nil when aa-grade gave
// none: the none backend).
func readConfinement() (*wire.Confinement, error) {
	encoded, ok := os.LookupEnv(wire.ConfinementEnv)
	if !ok {
		return nil, nil
	}
	// The commands the guest starts must not inherit it.
	if err := os.Unsetenv(wire.ConfinementEnv); err != nil {
		return nil, fmt.Errorf("sandbox confinement: %w", err)
	}
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
	if err := kernel.JoinCgroups(c.Cgroups); err != nil {
		return nil, nil, err
	}
	runtime.LockOSThread()
	guard := protectFromOOM()
	relay, err := confineSelf(c)
	return guard, relay, err
}

// confineSelf takes each step of c in its order (see wire.Confinement), and returns the listener
// it opened on the relay port.
func confineSelf(c *wire.Confinement) (relay net.Listener, err error) {
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
		if err := unix.Mount("", cv.At, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV,
			""); err != nil {
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
		if err := giveWorkspace(c.Workdir, *c.RunAs); err != nil {
			return nil, err
		}
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
