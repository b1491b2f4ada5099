package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/kernel"
)

// AgentDirPath is where the bwrap and docker sandboxes show Spec.AgentDir. Landlock, which may
// have no mount namespace to bind it in, shows it at its host path; AgentDirOf says where.
const AgentDirPath = "/opt/agent"

// ErrShownPath marks a host path a Spec asks to show that a sandbox may not show.
var ErrShownPath = errors.New("a host path the sandbox may not show")

// reservedPaths are the sandbox's own places: no host path shown may be one of them, hold one
// or lie in one, so that none shadows the workspace, the system's pseudo file systems or the
// guest, and none exposes the whole host.
var reservedPaths = []string{ReferenceWorkdir, "/tmp", "/proc", "/dev", "/sys", "/run", "/etc", AgentDirPath}

// checkShown checks the host paths of Programs and AgentDir: absolute, clean, their own
// resolution (a link on the way would show its target at another path than the one asked),
// and there. A program, shown at its own path, must be clear of the sandbox's own places; the
// agent folder may lie anywhere but may hold none of them (it would show the host's); neither
// may meet the scratch folder, which the model writes.
func (s *Spec) checkShown() error {
	check := func(what, p string, clear func(p, r string) bool) error {
		fail := func(why string) error { return fmt.Errorf("%w: %s %s: %s", ErrShownPath, what, p, why) }
		if !filepath.IsAbs(p) || filepath.Clean(p) != p {
			return fail("not an absolute, clean path")
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			return fail(err.Error())
		}
		if real != p {
			return fail("a link on the way leads to " + real + "; name that")
		}
		if overlaps(p, s.Scratch) {
			return fail("it meets the workspace " + s.Scratch)
		}
		for _, r := range reservedPaths {
			if !clear(p, r) {
				return fail("it would cover " + r + ", the sandbox's own")
			}
		}
		return nil
	}
	for _, p := range s.Programs {
		if err := check("program", p, func(p, r string) bool { return !overlaps(p, r) }); err != nil {
			return err
		}
	}
	if s.AgentDir == "" {
		return nil
	}
	if err := check("agent folder", s.AgentDir, func(p, r string) bool { return !kernel.Within(r, p) }); err != nil {
		return err
	}
	if info, err := os.Stat(s.AgentDir); err != nil || !info.IsDir() {
		return fmt.Errorf("%w: agent folder %s: not a folder", ErrShownPath, s.AgentDir)
	}
	return nil
}

// CheckShown checks host paths to show as Start will, the scratch folder aside, so that a run
// refuses a bad one before its first episode.
func CheckShown(programs []string, agentDir string) error {
	s := Spec{Programs: programs, AgentDir: agentDir}
	return s.checkShown()
}

// overlaps says whether one of the clean absolute paths a and b is, or lies in, the other.
func overlaps(a, b string) bool { return b != "" && (kernel.Within(a, b) || kernel.Within(b, a)) }

// shownPath is a host path shown read-only, and where the sandbox shows it.
type shownPath struct{ host, at string }

// shown are the host paths of spec that a sandbox with a mount namespace binds read-only:
// Programs at their own path, AgentDir at AgentDirPath.
func (s *Spec) shown() []shownPath {
	out := make([]shownPath, 0, len(s.Programs)+1)
	for _, p := range s.Programs {
		out = append(out, shownPath{p, p})
	}
	if s.AgentDir != "" {
		out = append(out, shownPath{s.AgentDir, AgentDirPath})
	}
	return out
}

// AgentDirOf says where commands of sb find its Spec.AgentDir ("" when it has none).
func AgentDirOf(sb Sandbox) string {
	if s, ok := sb.(*session); ok {
		return s.agentDir
	}
	return ""
}
