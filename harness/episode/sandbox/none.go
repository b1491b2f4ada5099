//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"os/exec"
)

// None runs commands on the bare host, in a workspace of links to the snapshot files: no
// isolation at all. It is used only when asked for by name, and callers warn on every run.
type None struct{}

func (None) Name() string     { return NameNone }
func (None) Available() error { return nil }

// Start links the snapshot files into the scratch folder and starts the guest there.
func (None) Start(ctx context.Context, spec Spec) (Sandbox, error) {
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	if spec.Relay != nil {
		return nil, fmt.Errorf("%w: the none sandbox has no loopback of its own (the host's 127.0.0.1 is every user's)",
			ErrNoRelay)
	}
	files, err := snapshotFiles(spec.Snapshot, spec.Hide)
	if err != nil {
		return nil, err
	}
	if err := linkSnapshot(spec.Scratch, files); err != nil {
		return nil, err
	}
	env := spec.Env
	if env == nil {
		env = CleanEnv(spec.Scratch)
	}
	cmd := exec.Command(spec.Guest, spec.GuestArg...)
	cmd.Dir, cmd.Env = spec.Scratch, env
	cgroup, err := newSandboxCgroup(spec.Limits.memory())
	if err != nil {
		return nil, err
	}
	s, err := startSession(cmd, spec.Scratch, spec.Guest, cgroup, endWalk, nil)
	if err != nil {
		return nil, err
	}
	s.agentDir = spec.AgentDir // everything of the host is in reach
	return s, nil
}
