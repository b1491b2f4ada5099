//go:build linux

package sandbox

import (
	"strings"
	"testing"
)

// TestGuaranteeDetailsAreTrueForTheirCase goes through every backend on every kind of host
// (root or not, with or without memory and pids cgroups, Landlock with or without namespaces,
// a mount namespace, signal scoping): no detail promises what another guarantee of the same
// report says does not hold (tmpfs pages counted as memory where there is no memory cgroup,
// a file count where none is bounded, nobody or uid 0 for a normal user).
func TestGuaranteeDetailsAreTrueForTheirCase(t *testing.T) {
	names := []string{GuaranteeNoInheritedFDs, GuaranteeHostReadsSafe, GuaranteeNoCapabilities, GuaranteeNotHostRoot, GuaranteeReadOnlySystem,
		GuaranteeNoNetwork, GuaranteeProcessesEnd, GuaranteeProcessLimit, GuaranteeMemoryLimit, GuaranteeDiskLimit, GuaranteeInodeLimit}
	for _, backend := range []string{NameBwrap, NameLandlock, NameNone} {
		for bits := range 1 << 7 {
			h := hostFacts{root: bits&1 != 0, memoryCgroup: bits&2 != 0, pidsCgroup: bits&4 != 0,
				landlockNS: bits&8 != 0, landlockMountNS: bits&16 != 0, landlockScopesSignals: bits&32 != 0}
			if bits&64 != 0 {
				h.cgroupReason = "no writable cgroup v1 memory hierarchy"
			}
			if h.landlockMountNS && !h.landlockNS || (!h.memoryCgroup || !h.pidsCgroup) != (h.cgroupReason != "") {
				continue // not a host there is
			}
			got := guaranteesOn(backend, h)
			holds := map[string]bool{}
			for _, g := range got {
				holds[g.Name] = g.Holds
			}
			var all strings.Builder
			for _, g := range got {
				all.WriteString(g.Name + ": " + g.Detail + "\n")
			}
			report := func(format string, args ...any) {
				t.Helper()
				t.Errorf("%s on %+v: "+format+"\n%s", append(append([]any{backend, h}, args...), all.String())...)
			}
			if len(got) != len(names) {
				report("%d guarantees, want %d", len(got), len(names))
			}
			for _, n := range names {
				if _, ok := holds[n]; !ok {
					report("no %s", n)
				}
			}
			for _, g := range got {
				d := g.Detail
				claims := func(phrase string) bool { return strings.Contains(d, phrase) }
				switch {
				case d == "":
					report("%s says nothing", g.Name)
				case !holds[GuaranteeMemoryLimit] && (claims("--memory-limit") || claims("counted as memory")):
					report("%s speaks of a memory limit that does not hold: %s", g.Name, d)
				case !holds[GuaranteeDiskLimit] && claims("of --disk-limit bytes"):
					report("%s speaks of a disk limit that does not hold: %s", g.Name, d)
				case !holds[GuaranteeInodeLimit] && claims("one file per 16 KiB"):
					report("%s speaks of a file count that does not hold: %s", g.Name, d)
				case !h.pidsCgroup && claims("(a pids cgroup)"):
					report("%s speaks of a pids cgroup there is not: %s", g.Name, d)
				case !h.root && (claims("nobody") || claims("uid 0")):
					report("%s speaks of root's case for a normal user: %s", g.Name, d)
				case h.root && (claims("normal user") || claims("user namespace mapping") || claims("own user namespace")):
					report("%s speaks of a normal user's case for root: %s", g.Name, d)
				case claims("own user namespace") && backend == NameLandlock && !h.landlockNS:
					report("%s speaks of a user namespace Landlock does not have: %s", g.Name, d)
				case claims("mount namespace") && backend == NameLandlock && !h.landlockMountNS && g.Holds:
					report("%s holds by a mount namespace Landlock does not have: %s", g.Name, d)
				case g.Name == GuaranteeNotHostRoot && h.root && backend == NameLandlock && g.Holds != h.landlockMountNS:
					report("not_host_root is %v for Landlock as root, which runs commands as nobody only with a mount namespace: %s", g.Holds, d)
				case g.Name == GuaranteeProcessLimit && g.Holds && h.root && !h.pidsCgroup && backend != NameBwrap && !(backend == NameLandlock && h.landlockMountNS):
					report("process_limit holds for uid 0, which RLIMIT_NPROC exempts, without a pids cgroup: %s", d)
				}
			}
		}
	}
}
