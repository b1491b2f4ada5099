//go:build linux

package sandbox

import (
	"fmt"
	"os"
)

// Guarantees says which guarantees each backend keeps here, for doctor and run's warnings.
func Guarantees(b Backend) []Guarantee {
	if err := b.Available(); err != nil {
		return nil
	}
	root := os.Geteuid() == 0
	cg := cgroups()
	memory := Guarantee{GuaranteeMemoryLimit, cg.boundsMemory(), "a memory cgroup per episode, no swap"}
	if !memory.Holds {
		memory.Detail = "no memory cgroup (" + cg.reason + "): each process is bounded to 8 GiB of address space, not the episode"
	}
	processes := Guarantee{GuaranteeProcessLimit, true, fmt.Sprintf("%d processes per episode (a pids cgroup)", maxSandboxProcesses)}
	if !cg.boundsProcesses() {
		processes.Detail = fmt.Sprintf("%d processes per user (RLIMIT_NPROC; per sandbox where it has a user namespace)", maxSandboxProcesses)
	}
	always := []Guarantee{
		{GuaranteeNoInheritedFDs, true, "descriptors are made close-on-exec before a sandbox starts, and in the agent"},
		hostReadsSafely,
	}
	switch b.Name() {
	case NameDocker:
		return dockerGuarantees()
	case NameBwrap:
		user := Guarantee{GuaranteeNotHostRoot, true, "a user namespace mapping only the user"}
		system := Guarantee{GuaranteeReadOnlySystem, true, "read-only binds in a mount namespace (in /proc only the user's own processes are theirs to write); mount, unshare and setns refused"}
		inodes := Guarantee{GuaranteeInodeLimit, false, "bubblewrap cannot bound a tmpfs' file count for a normal user; the kernel's default (half of RAM's pages) applies"}
		if root {
			user.Detail = "commands run as nobody (65534)"
			system.Detail = "read-only binds in a mount namespace, /proc read-only but for the processes' folders; mount, unshare and setns refused"
			inodes = Guarantee{GuaranteeInodeLimit, true, "the workspace and /tmp each hold at most one file per 16 KiB of --disk-limit"}
		}
		return append(always,
			Guarantee{GuaranteeNoCapabilities, true, "empty bounding set, no capability, no_new_privs"},
			user, system,
			Guarantee{GuaranteeNoNetwork, true, "a network namespace, and socket(2) refused"},
			Guarantee{GuaranteeProcessesEnd, true, "a pid namespace, which dies with its init, and so with aa-grade"},
			processes, memory,
			Guarantee{GuaranteeDiskLimit, true, "the workspace and /tmp are tmpfs of --disk-limit bytes each, their pages counted as memory on top of --memory-limit"},
			inodes)
	case NameLandlock:
		ns := landlockNamespaces() != nil
		caps := Guarantee{GuaranteeNoCapabilities, true, "empty bounding set, no capability, no_new_privs"}
		if !root && !ns {
			caps = Guarantee{GuaranteeNoCapabilities, false, "no capability and no_new_privs, so none can be gained, but a normal user without user namespaces cannot empty the bounding set"}
		}
		user := Guarantee{GuaranteeNotHostRoot, !root, "commands run as the user"}
		if root {
			user.Detail = "commands run as uid 0 with no capability: they reach the snapshot by its host path, which only its owner may (a root cache)"
		}
		end := Guarantee{GuaranteeProcessesEnd, true, "a pid namespace, which dies with its init, the agent, and so with aa-grade"}
		switch {
		case ns:
		case landlockScopesSignals():
			end.Detail = "the agent kills its signal-scoped Landlock domain when its input ends: at the episode's end, and when aa-grade dies"
		default:
			end = Guarantee{GuaranteeProcessesEnd, false, "no pid namespace and no signal scoping (Landlock ABI < 6): processes are killed by a walk of /proc, which a process that keeps forking can outrun"}
		}
		return append(always, caps, user,
			Guarantee{GuaranteeReadOnlySystem, true, "Landlock allows writes only in the workspace; mount refused"},
			Guarantee{GuaranteeNoNetwork, true, "socket(2) refused, TCP refused by Landlock"},
			end, processes, memory,
			Guarantee{GuaranteeDiskLimit, false, "the workspace is a host folder: only each file is bounded (2 GiB)"},
			Guarantee{GuaranteeInodeLimit, false, "the workspace is a host folder"})
	}
	none := "no isolation"
	asUser := "commands run as aa-grade's user, with no isolation"
	return append(always,
		Guarantee{GuaranteeNoCapabilities, !root, asUser},
		Guarantee{GuaranteeNotHostRoot, !root, asUser},
		Guarantee{GuaranteeReadOnlySystem, false, none},
		Guarantee{GuaranteeNoNetwork, false, none},
		Guarantee{GuaranteeProcessesEnd, false, "killed by a walk of /proc, which a process that keeps forking can outrun"},
		processes, memory,
		Guarantee{GuaranteeDiskLimit, false, none},
		Guarantee{GuaranteeInodeLimit, false, none})
}

// LimitsNotEnforced lists the limits the backend cannot enforce here, for run's warning.
func LimitsNotEnforced(b Backend) []Guarantee {
	var out []Guarantee
	for _, g := range Guarantees(b) {
		switch g.Name {
		case GuaranteeMemoryLimit, GuaranteeDiskLimit, GuaranteeInodeLimit, GuaranteeProcessesEnd:
			if !g.Holds {
				out = append(out, g)
			}
		}
	}
	return out
}
