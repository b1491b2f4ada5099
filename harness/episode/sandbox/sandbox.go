// Package sandbox runs an untrusted model's shell commands on the user's machine, where they
// can touch nothing but their workspace. One sandbox lives for one episode: it is set up once
// (namespaces, mounts, limits), a small guest (the aa-grade binary in guest mode) runs inside
// it, and each command is only a fork and exec of `bash -c` by that guest, in its own process
// group. When the episode ends everything that ran inside dies with it.
//
// This package is the host's side: the API, the backends that set a sandbox up and start the
// guest in it, and the session that talks to the guest. The guest is package guest, and what
// crosses between the two is package wire; this package imports wire, never guest.
package sandbox

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// Spec describes the workspace of one episode.
type Spec struct {
	Snapshot string   // the task's snapshot folder on the host, shown read-only
	Hide     []string // paths relative to Snapshot never shown (the ground truth)
	// Scratch is a fresh host folder for the workspace of landlock (under a tmpfs where it has a
	// mount namespace) and none; bwrap and docker keep theirs in a tmpfs.
	Scratch  string
	Guest    string     // the guest executable (default: this executable)
	GuestArg []string   // its arguments that select guest mode
	Env      []string   // the whole environment of commands (see CleanEnv)
	Limits   Limits     // what the episode may use of the host (zero: DefaultLimits)
	Relay    *RelaySpec // a relay from the sandbox's loopback to aa-grade (nil: none, no socket at all)
	// Programs are host files or folders shown read-only at their own path: a CLI agent's
	// install that the sandbox's system lacks (see checkShown for what may be shown).
	Programs []string
	// AgentDir is a host folder of the user's agent (run --agent-dir), shown read-only at
	// AgentDirPath, or at its own path in landlock and none (AgentDirOf says where).
	AgentDir string
}

// Limits bound what one episode may use of the host. Hitting one is an error the model's
// command sees (a process killed for memory, "No space left on device"), never the host's
// problem. Where a backend cannot enforce one, Guarantees says so.
type Limits struct {
	// Memory bounds the memory of all the episode's processes together, with no swap.
	Memory int64
	// Disk bounds the bytes the workspace holds, and those /tmp holds (in Landlock, the
	// workspace and the temporary folder in it together). Where these are tmpfs (bwrap,
	// docker, Landlock with a mount namespace), their pages count in the same cgroup:
	// processes and files together get Memory + Disk, so a full workspace is "No space left
	// on device", never a sandbox left without memory to run the next command.
	Disk int64
}

// DefaultLimits fit a real investigation: the snapshot plus pandas over hundreds of MB.
var DefaultLimits = Limits{Memory: 4 << 30, Disk: 4 << 30}

func (l Limits) memory() int64 { return cmp.Or(l.Memory, DefaultLimits.Memory) }
func (l Limits) disk() int64   { return cmp.Or(l.Disk, DefaultLimits.Disk) }

// inodes bounds the files and folders the workspace, and /tmp, may hold: one per 16 KiB of
// the disk limit (262,144 for 4 GiB), at least 4,096. Each costs kernel memory that the size
// of a tmpfs does not count.
func (l Limits) inodes() int64 { return max(l.disk()/(16<<10), 4096) }

// Result is the outcome of one command, as the guest answers it (see package wire).
type Result = wire.Result

// Sandbox is a running episode workspace.
type Sandbox interface {
	// Workdir is the workspace as commands see it (the prompt says where the data is).
	Workdir() string
	// Run executes `bash -c cmd` in the workspace, killing its process group on timeout.
	Run(ctx context.Context, cmd string, timeout time.Duration) (Result, error)
	// ReadFile reads a regular file of the workspace (at most limit bytes, else an error
	// matching safefile.ErrTooLarge), resolved as the sandbox sees it and never through a
	// link out of the workspace; a FIFO or device is refused without blocking.
	ReadFile(ctx context.Context, name string, limit int64) ([]byte, error)
	// CheckFile says whether name is a regular file of the workspace, by ReadFile's rules.
	CheckFile(ctx context.Context, name string) error
	// Close kills every process of the episode.
	Close() error
}

// Backend starts sandboxes of one kind.
type Backend interface {
	Name() string
	// Available says why the backend cannot work here (nil when it can).
	Available() error
	Start(ctx context.Context, spec Spec) (Sandbox, error)
}

// Release gives back what b keeps for the episodes of a run once they are over: the docker
// backend's volumes of the tasks' files, which its episodes share. b may start episodes again
// after, keeping anew.
func Release(b Backend) {
	if r, ok := b.(interface{ release() }); ok {
		r.release()
	}
}

// GuestCommand is the hidden aa-grade command that runs the guest inside a sandbox.
const GuestCommand = "__sandbox-guest"

// Names of the backends, strongest first.
const (
	NameBwrap = "bwrap"
	NameNone  = "none"
	NameAuto  = "auto"
)

// ErrUnavailable marks a backend that cannot run on this machine.
var ErrUnavailable = errors.New("sandbox unavailable")

// ErrImageUnusable marks an image that cannot run an episode: missing, for another machine,
// or without bash. The fix is another image, not another machine, so it is a usage error
// whichever backend met it.
var ErrImageUnusable = errors.New("the image cannot run an episode")

// ErrNoImage marks, besides ErrImageUnusable, an image the Docker daemon does not have.
var ErrNoImage = errors.New("no image")

// ErrNoIsolation marks, besides ErrUnavailable, a machine where no backend but none works
// (Linux: elsewhere none does not work either).
var ErrNoIsolation = errors.New("no isolating backend works here")

// ErrOutsideWorkspace marks a file name that leads out of the workspace (through .. or a link).
var ErrOutsideWorkspace = wire.ErrOutsideWorkspace

// Guarantee is one promise a backend makes, or cannot make, on this machine against a hostile
// model, with how it is kept or why it is not.
type Guarantee struct {
	Name   string `json:"name"`
	Holds  bool   `json:"holds"`
	Detail string `json:"detail"`
}

// The guarantees, by name.
const (
	GuaranteeNoCapabilities = "no_capabilities"   // no capability, none can be gained
	GuaranteeNotHostRoot    = "not_host_root"     // commands never run as the host's root
	GuaranteeReadOnlySystem = "read_only_system"  // system and snapshot read-only, no mount
	GuaranteeNoNetwork      = "no_network"        // no socket: no TCP, UDP, DNS, no host Unix socket
	GuaranteeNoInheritedFDs = "no_inherited_fds"  // nothing aa-grade inherited reaches a command
	GuaranteeHostReadsSafe  = "host_reads_safely" // links, FIFOs the model makes cannot steer aa-grade
	GuaranteeProcessesEnd   = "processes_end"     // nothing outlives the episode, or aa-grade
	GuaranteeProcessLimit   = "process_limit"
	GuaranteeMemoryLimit    = "memory_limit"
	GuaranteeDiskLimit      = "disk_limit"
	GuaranteeInodeLimit     = "inode_limit"
)

// Select returns the backend for a --sandbox value. auto picks the strongest isolating
// backend that works here and fails when none does; none must be asked for by name.
func Select(name string) (Backend, error) {
	if name == "" || name == NameAuto {
		var reasons []string
		for _, b := range Backends() {
			if b.Name() == NameNone {
				continue
			}
			err := b.Available()
			if err == nil {
				return b, nil
			}
			reasons = append(reasons, fmt.Sprintf("%s: %v", b.Name(), err))
		}
		why := strings.Join(reasons, "; ")
		if (None{}).Available() != nil { // macOS, Windows: docker or nothing
			return nil, fmt.Errorf("%w: no backend works here (%s); %s", ErrUnavailable, why, IsolationFix)
		}
		return nil, fmt.Errorf("%w: %w (%s); %s", ErrUnavailable, ErrNoIsolation, why, IsolationFix)
	}
	for _, b := range Backends() {
		if b.Name() == name {
			if err := b.Available(); err != nil {
				return nil, fmt.Errorf("%w: %s: %w", ErrUnavailable, name, err)
			}
			return b, nil
		}
	}
	var names []string
	for _, b := range Backends() {
		names = append(names, b.Name())
	}
	return nil, fmt.Errorf("unknown sandbox %q; known: auto, %s", name, strings.Join(names, ", "))
}

// CleanEnv is the environment commands get: nothing of the user's (no API key, no token),
// only what a shell needs.
func CleanEnv(home string) []string {
	return []string{
		"PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin",
		"HOME=" + home,
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"TERM=dumb",
		"SHELL=/bin/bash",
		"USER=user",
		"TMPDIR=/tmp",
		"PYTHONDONTWRITEBYTECODE=1",
	}
}

func (s *Spec) defaults() error {
	if s.Guest == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("find the guest executable: %w", err)
		}
		s.Guest = exe
		s.GuestArg = []string{GuestCommand}
	}
	if s.Scratch == "" {
		return errors.New("sandbox: no scratch folder")
	}
	if err := s.checkShown(); err != nil {
		return err
	}
	return s.Relay.check()
}

// hostReadsSafely holds on every backend: the guest opens what aa-grade reads of the workspace.
var hostReadsSafely = Guarantee{GuaranteeHostReadsSafe, true,
	"the guest reads the submission inside the workspace (os.Root), non-blocking, regular files only, bounded"}

// imageUser is a backend that can run episodes in an image.
type imageUser interface {
	useImage(ctx context.Context, ref, cacheDir string, progress func(Event)) error
	// image is the image in use and its config digest ("" when none or not yet known).
	image() (ref, digest string)
}

// ImageOf is the image b runs episodes in and its config digest, "" when it runs on the
// host's own system.
func ImageOf(b Backend) (ref, digest string) {
	if u, ok := b.(imageUser); ok {
		return u.image()
	}
	return "", ""
}

// UseImage makes b run episodes in the image ref. Docker takes an image name, and has its
// daemon pull one that names its registry (registry.example:5000/name:tag) when it lacks it.
// Bwrap takes a `docker save` tarball, an OCI image layout folder or a registry reference,
// pulled over the distribution API; it unpacks the image once into cacheDir and shows it
// read-only as `/`. A pull is told to progress (when not nil) as an Event. Other backends run
// on the host's own system and refuse. A failure of the daemon, the network or a registry
// matches ErrUnavailable; any other is the reference's.
func UseImage(ctx context.Context, b Backend, ref, cacheDir string, progress func(Event)) error {
	u, ok := b.(imageUser)
	if !ok {
		return fmt.Errorf("the %s sandbox runs on this machine's own system; an image needs bwrap or docker", b.Name())
	}
	return u.useImage(ctx, ref, cacheDir, progress)
}

// unavailableError marks a failure of the machine or the network as ErrUnavailable, keeping
// its text.
type unavailableError struct{ error }

func (e unavailableError) Unwrap() error        { return e.error }
func (e unavailableError) Is(target error) bool { return target == ErrUnavailable }

// imageError marks an error as ErrImageUnusable, keeping its text.
type imageError struct{ error }

func (e imageError) Unwrap() error        { return e.error }
func (e imageError) Is(target error) bool { return target == ErrImageUnusable }
