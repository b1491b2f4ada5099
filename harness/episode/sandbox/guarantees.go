//go:build linux

package sandbox

import (
	"fmt"
	"os"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// Guarantees says which guarantees each backend keeps here, for doctor and run's warnings.
// Finding Landlock's namespaces out starts this executable as the guest once (as aa-grade,
// and test binaries calling guesttest.Main, serve it).
func Guarantees(b Backend) []Guarantee {
	if err := b.Available(); err != nil {
		return nil
	}
	if b.Name() == NameDocker {
		return dockerGuarantees()
	}
	return guaranteesOn(b.Name(), thisHost())
}

// hostFacts are what the guarantees of the backends that run on this host depend on.
type hostFacts struct {
	root         bool
	memoryCgroup bool   // a memory cgroup bounds each episode
	pidsCgroup   bool   // a pids cgroup bounds each episode
	cgroupReason string // why not, when either is missing
	// Where a Landlock guest runs: in namespaces of its own, a mount namespace among them, a
	// signal-scoped domain (Landlock ABI 6).
	landlockNS, landlockMountNS, landlockScopesSignals bool
}

func thisHost() hostFacts {
	cg := cgroups()
	ns := landlockNamespaces()
	return hostFacts{root: os.Geteuid() == 0, memoryCgroup: cg.boundsMemory(), pidsCgroup: cg.boundsProcesses(),
		cgroupReason: cg.reason, landlockNS: ns != nil, landlockMountNS: hasMountNamespace(ns),
		landlockScopesSignals: landlockScopesSignals()}
}

// guaranteesOn is what backend name keeps on a host with facts h; each detail says how a
// guarantee holds, or why not, in exactly that case.
func guaranteesOn(name string, h hostFacts) []Guarantee {
	always := []Guarantee{
		{GuaranteeNoInheritedFDs, true, "descriptors are made close-on-exec before a sandbox starts, and in the guest"},
		hostReadsSafely,
	}
	switch name {
	case NameBwrap:
		user := Guarantee{GuaranteeNotHostRoot, true, "a user namespace mapping only the user"}
		system := Guarantee{GuaranteeReadOnlySystem, true,
			"read-only binds in a mount namespace, /dev read-only with no pty (in /proc only the user's own processes are " +
				"theirs to write); mount, unshare and setns refused"}
		inodes := Guarantee{GuaranteeInodeLimit, false,
			"bubblewrap cannot bound a tmpfs' file count for a normal user; the kernel's default (half of RAM's pages) applies"}
		if h.root {
			user.Detail = "commands run as nobody (65534)"
			system.Detail = "read-only binds in a mount namespace, /dev read-only with no pty, /proc read-only but for the " +
				"processes' folders; mount, unshare and setns refused"
			inodes = Guarantee{GuaranteeInodeLimit, true,
				"the workspace and /tmp each hold at most one file per 16 KiB of --disk-limit"}
		}
		return append(always, Guarantee{GuaranteeNoCapabilities, true, "empty bounding set, no capability, no_new_privs"},
			user, system, Guarantee{GuaranteeNoNetwork, true, "a network namespace, and socket(2) refused; " + relayOpens},
			Guarantee{GuaranteeProcessesEnd, true, "a pid namespace, which dies with its init, and so with aa-grade"},
			processLimit(name, h, !h.root), memoryLimit(h, true), Guarantee{GuaranteeDiskLimit, true,
				"the workspace and /tmp are tmpfs of --disk-limit bytes each" + tmpfsPages(h, "their")}, inodes)
	case NameLandlock:
		caps := Guarantee{GuaranteeNoCapabilities, true, "empty bounding set, no capability, no_new_privs"}
		if !h.root && !h.landlockNS {
			caps = Guarantee{GuaranteeNoCapabilities, false,
				"no capability and no_new_privs, so none can be gained, but a normal user without user namespaces cannot empty " +
					"the bounding set"}
		}
		user := Guarantee{GuaranteeNotHostRoot, true, "commands run as the user"}
		system := Guarantee{GuaranteeReadOnlySystem, true,
			"every mount but the workspace's is read-only in the guest's mount namespace, and Landlock allows writes only in " +
				"the workspace; mount refused"}
		switch {
		case h.root && h.landlockMountNS:
			user.Detail = "commands run as nobody (65534), the snapshot files bound into their workspace"
		case h.root:
			user = Guarantee{GuaranteeNotHostRoot, false,
				"commands run as uid 0 with no capability: without a mount namespace here they reach the snapshot by its host " +
					"path, which only its owner may (a root cache)"}
		}
		if !h.landlockMountNS {
			system.Detail = "Landlock allows writes only in the workspace; with no read-only mounts here, chmod, chown, utime " +
				"and xattr calls are refused everywhere (so touch of an existing file and chmod fail in the workspace too); " +
				"mount refused"
		}
		end := Guarantee{GuaranteeProcessesEnd, true,
			"a pid namespace, which dies with its init, the guest, and so with aa-grade"}
		switch {
		case h.landlockNS:
		case h.landlockScopesSignals:
			end.Detail = "the guest kills its signal-scoped Landlock domain when its input ends: at the episode's end, and " +
				"when aa-grade dies"
		default:
			end = Guarantee{GuaranteeProcessesEnd, false,
				"no pid namespace and no signal scoping (Landlock ABI < 6): processes are killed by a walk of /proc, which a " +
					"process that keeps forking can outrun"}
		}
		disk := Guarantee{GuaranteeDiskLimit, true,
			"the workspace, its temporary folder included, is a tmpfs of --disk-limit bytes in the guest's mount " +
				"namespace" + tmpfsPages(h, "its")}
		inodes := Guarantee{GuaranteeInodeLimit, true,
			"the workspace's tmpfs holds at most one file per 16 KiB of --disk-limit"}
		if !h.landlockMountNS {
			why := "no mount namespace can be made here"
			if !h.root && !h.landlockNS {
				why = "a normal user without user namespaces has no mount namespace"
			}
			disk = Guarantee{GuaranteeDiskLimit, false,
				why + ": the workspace is a host folder, and only each file is bounded (2 GiB)"}
			inodes = Guarantee{GuaranteeInodeLimit, false, why + ": the workspace is a host folder"}
		}
		network := Guarantee{GuaranteeNoNetwork, true, "socket(2) refused, TCP refused by Landlock; " + relayOpens}
		if !h.landlockNS {
			network.Detail = "socket(2) refused, TCP refused by Landlock; an agent run (--agent) is refused, with no network " +
				"namespace here for its relay"
		}
		return append(always, caps, user, system, network,
			end, processLimit(name, h, !h.root && h.landlockNS), memoryLimit(h, h.landlockMountNS), disk, inodes)
	}
	none := "no isolation"
	asUser := "commands run as aa-grade's user, with no isolation"
	return append(always, Guarantee{GuaranteeNoCapabilities, !h.root, asUser},
		Guarantee{GuaranteeNotHostRoot, !h.root, asUser}, Guarantee{GuaranteeReadOnlySystem, false, none},
		Guarantee{GuaranteeNoNetwork, false, none},
		Guarantee{GuaranteeProcessesEnd, false, "killed by a walk of /proc, which a process that keeps forking can outrun"},
		processLimit(name, h, false), memoryLimit(h, false), Guarantee{GuaranteeDiskLimit, false, none},
		Guarantee{GuaranteeInodeLimit, false, none})
}

// memoryLimit is the memory guarantee; tmpfs says the sandbox's files are in a tmpfs, whose
// pages the cgroup counts.
func memoryLimit(h hostFacts, tmpfs bool) Guarantee {
	if !h.memoryCgroup {
		return Guarantee{GuaranteeMemoryLimit, false,
			"no memory cgroup (" + h.cgroupReason + "): each process is bounded to 8 GiB of address space, not the episode"}
	}
	if tmpfs {
		return Guarantee{GuaranteeMemoryLimit, true,
			"a memory cgroup per episode, no swap: --memory-limit for the processes, plus --disk-limit for the pages of " +
				"their tmpfs files"}
	}
	return Guarantee{GuaranteeMemoryLimit, true, "a memory cgroup per episode of --memory-limit, no swap"}
}

// tmpfsPages ends a disk guarantee's detail: where the pages of the tmpfs (its, their) are
// counted.
func tmpfsPages(h hostFacts, its string) string {
	if h.memoryCgroup {
		return ", " + its + " pages counted as memory on top of --memory-limit"
	}
	return ", in memory that no cgroup counts here"
}

// processLimit is the process guarantee; ownUserNS says the sandbox has a user namespace of
// its own, in which RLIMIT_NPROC counts only its processes.
func processLimit(name string, h hostFacts, ownUserNS bool) Guarantee {
	switch {
	case h.pidsCgroup:
		return Guarantee{GuaranteeProcessLimit, true,
			fmt.Sprintf("%d processes per episode (a pids cgroup)", wire.MaxProcesses)}
	case ownUserNS:
		return Guarantee{GuaranteeProcessLimit, true,
			fmt.Sprintf("%d processes per episode (RLIMIT_NPROC, counted in the sandbox's own user namespace)",
				wire.MaxProcesses)}
	case h.root && (name == NameBwrap || name == NameLandlock && h.landlockMountNS):
		return Guarantee{GuaranteeProcessLimit, true,
			fmt.Sprintf("no pids cgroup (%s): %d processes of nobody (65534) across all episodes (RLIMIT_NPROC)", h.cgroupReason,
				wire.MaxProcesses)}
	case h.root:
		return Guarantee{GuaranteeProcessLimit, false,
			fmt.Sprintf("no pids cgroup (%s), and uid 0 is exempt from RLIMIT_NPROC", h.cgroupReason)}
	}
	return Guarantee{GuaranteeProcessLimit, true, fmt.Sprintf(
		"%d processes of the user altogether (RLIMIT_NPROC counts all of the user's processes, not the episode's)",
		wire.MaxProcesses)}
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
