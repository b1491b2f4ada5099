//go:build linux

package sandbox

import (
	"bufio"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The second red team's ways out (issue 23): host file metadata changed from Landlock, the
// sandbox's pid 1 taken over, every pty of the host held, /dev filled past the disk limit.

// backendCase is a backend under test, noNS taking Landlock's path for machines without
// namespaces.
type backendCase struct {
	name string
	b    Backend
	noNS bool
}

// metadataBackends are the isolating backends, and Landlock once more on the path of machines
// without namespaces, where no read-only mount can stop a metadata change.
func metadataBackends(t *testing.T) []backendCase {
	var out []backendCase
	for _, b := range backends(t, true) {
		out = append(out, backendCase{b.Name(), b, false})
		if b.Name() == NameLandlock {
			out = append(out, backendCase{"landlock-without-namespaces", b, true})
		}
	}
	return out
}

// withoutLandlockNamespaces makes Landlock sandboxes of this test start as on a machine that
// allows no namespace.
func withoutLandlockNamespaces(t *testing.T) {
	saved := landlockNamespaces
	landlockNamespaces = func() *syscall.SysProcAttr { return nil }
	t.Cleanup(func() { landlockNamespaces = saved })
}

// hostTargets are host files of the user running the test, reachable by path by anyone (their
// folders searchable): a private file, a private folder and a program.
type hostTargets struct {
	secret, folder, program string
}

func newHostTargets(t *testing.T) hostTargets {
	t.Helper()
	dir := t.TempDir()
	for p := dir; p != os.TempDir() && p != "/"; p = filepath.Dir(p) {
		if err := os.Chmod(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	h := hostTargets{secret: filepath.Join(dir, "secret"), folder: filepath.Join(dir, "private"), program: filepath.Join(dir, "rootbash")}
	if err := os.WriteFile(h.secret, []byte("key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(h.folder, 0o700); err != nil {
		t.Fatal(err)
	}
	bash, err := os.ReadFile("/bin/bash")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(h.program, bash, 0o755); err != nil {
		t.Fatal(err)
	}
	return h
}

type fileState struct {
	mode     fs.FileMode
	mtime    time.Time
	uid, gid uint32
	xattrs   string
}

func stateOf(t *testing.T, path string) fileState {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	buf := make([]byte, 4096)
	n, _ := unix.Llistxattr(path, buf)
	return fileState{mode: info.Mode(), mtime: info.ModTime(), uid: st.Uid, gid: st.Gid, xattrs: string(buf[:max(n, 0)])}
}

func TestCommandsCannotChangeHostFileMetadata(t *testing.T) {
	for _, c := range metadataBackends(t) {
		t.Run(c.name, func(t *testing.T) {
			if c.noNS {
				withoutLandlockNamespaces(t)
			}
			h := newHostTargets(t)
			before := map[string]fileState{}
			for _, p := range []string{h.secret, h.folder, h.program} {
				before[p] = stateOf(t, p)
			}
			sb := start(t, c.b, newFixture(t))
			py := func(code string) string { return fmt.Sprintf("python3 -c %q", "import os; "+code) }
			attacks := []struct{ name, cmd string }{
				{"setuid bit on a program", "chmod 4755 " + h.program},
				{"a private file opened to all", "chmod 666 " + h.secret},
				{"a private folder opened to all", "chmod 1777 " + h.folder},
				{"fchmod through a descriptor", py(fmt.Sprintf("fd = os.open(%q, os.O_RDONLY); os.fchmod(fd, 0o6755)", h.program))},
				{"times set back", "touch -d 1999-01-01 " + h.secret},
				{"times set to now", py(fmt.Sprintf("os.utime(%q)", h.secret))},
				{"an extended attribute", py(fmt.Sprintf("os.setxattr(%q, 'user.x', b'1')", h.secret))},
				{"ownership", py(fmt.Sprintf("os.chown(%q, %d, %d)", h.secret, os.Getuid(), os.Getgid()))},
			}
			for _, a := range attacks {
				run(t, sb, a.cmd)
			}
			for p, want := range before {
				if got := stateOf(t, p); got != want {
					t.Errorf("%s changed from outside the sandbox: %+v, was %+v", p, got, want)
				}
			}
		})
	}
}

// TestWorkspaceMetadataStillWorks: where the system is read-only by mounts, the model keeps
// chmod, touch and extended attributes in its own workspace.
func TestWorkspaceMetadataStillWorks(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			r := run(t, sb, `echo "echo ran" > s.sh && chmod 750 s.sh && touch -d 2001-01-01 s.sh && touch new && stat -c "%a %y" s.sh | cut -c1-8`)
			if r.Stdout != "750 2001\n" || r.ExitCode != 0 {
				t.Fatalf("chmod and touch in the workspace: %+v", r)
			}
		})
	}
}

// guestThreads lists the status files of the threads of the sandbox guests this test process
// started (its descendants running the guest).
func guestThreads(t *testing.T) []string {
	t.Helper()
	parent := func(pid int) int {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0
		}
		s := string(b)
		fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		ppid, _ := strconv.Atoi(fields[1])
		return ppid
	}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	var out []string
	for _, dir := range procs {
		pid, _ := strconv.Atoi(filepath.Base(dir))
		cmdline, _ := os.ReadFile(dir + "/cmdline")
		if !strings.Contains(string(cmdline), GuestCommand) {
			continue
		}
		mine := false
		for p := parent(pid); p > 1; p = parent(p) {
			if p == os.Getpid() {
				mine = true
				break
			}
		}
		if mine {
			tasks, _ := filepath.Glob(dir + "/task/*/status")
			out = append(out, tasks...)
		}
	}
	return out
}

func TestNoThreadOfTheGuestKeepsCapabilities(t *testing.T) {
	for _, b := range backends(t, true) {
		if b.Name() == NameDocker {
			continue // the daemon's container: its threads are not this process's children
		}
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			run(t, sb, "true") // the guest has confined itself
			threads := guestThreads(t)
			if len(threads) < 2 {
				t.Fatalf("found %d threads of the guest", len(threads))
			}
			for _, status := range threads {
				f, err := os.Open(status)
				if err != nil {
					continue // a thread that ended
				}
				s := bufio.NewScanner(f)
				for s.Scan() {
					k, v, _ := strings.Cut(s.Text(), ":")
					if (k == "CapEff" || k == "CapPrm" || k == "CapAmb") && strings.TrimSpace(v) != "0000000000000000" {
						t.Errorf("%s: %s %s", status, k, strings.TrimSpace(v))
					}
				}
				f.Close()
			}
		})
	}
}

// TestCommandsCannotTakeOverTheGuest: pid 1 and the guest (the command's parent) can be
// neither traced, nor read or written through process_vm_*, nor written to through their
// descriptors; pid 1 shows no host path.
func TestCommandsCannotTakeOverTheGuest(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sb := start(t, b, f)
			attacks := []struct{ name, cmd string }{
				{"ptrace pid 1", `python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.ptrace(16, 1, 0, 0) == 0 else 1)"`},
				{"ptrace the guest", `python3 -c "
import ctypes, os, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.ptrace(16, os.getppid(), 0, 0) == 0 else 1)" `},
				{"seize pid 1", `python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
sys.exit(0 if libc.ptrace(0x4206, 1, 0, 0) == 0 else 1)"`},
				{"read pid 1's memory", `python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
class iovec(ctypes.Structure): _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]
buf = ctypes.create_string_buffer(8)
local, remote = iovec(ctypes.cast(buf, ctypes.c_void_p), 8), iovec(0x400000, 8)
sys.exit(0 if libc.process_vm_readv(1, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0) >= 0 or ctypes.get_errno() == 14 else 1)"`},
				{"write to pid 1's output", `printf '{"forged":1}\n' > /proc/1/fd/1`},
				{"write to the guest's output", `printf '{"forged":1}\n' > /proc/$PPID/fd/1`},
			}
			for _, a := range attacks {
				if r := run(t, sb, a.cmd); r.ExitCode == 0 {
					t.Errorf("%s worked: %+v", a.name, r)
				}
			}
			if r := run(t, sb, "echo still served"); r.Stdout != "still served\n" {
				t.Fatalf("the guest answers wrongly after the attacks: %+v", r)
			}
			r := run(t, sb, `tr '\0' ' ' < /proc/1/cmdline`)
			if strings.Contains(r.Stdout, f.snapshot) || strings.Contains(r.Stdout, "--ro-bind") {
				t.Errorf("pid 1 shows host paths: %q", r.Stdout)
			}
		})
	}
}

// TestNoPty: one episode cannot take the host's ptys (a pool all sandboxes and containers
// share, 4,096 by default) from the others: the sandbox has none, which a shell tool with
// pipes never needs.
func TestNoPty(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			r := run(t, sb, `python3 -c "
import os
held = []
try:
    while len(held) < 256:
        held.append(os.openpty())
except OSError:
    pass
print(len(held))"`)
			n, err := strconv.Atoi(strings.TrimSpace(r.Stdout))
			if err != nil {
				t.Fatalf("%+v", r)
			}
			if n > 0 {
				t.Fatalf("one command held %d ptys, want none", n)
			}
		})
	}
}

// TestDevIsInsideTheDiskLimit: /dev and /dev/shm take no more than the disk limit (less than
// docker's own 64 MiB of /dev/shm).
func TestDevIsInsideTheDiskLimit(t *testing.T) {
	const limit = 32 << 20
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			sb, err := b.Start(t.Context(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"}, Scratch: f.scratch,
				Guest: exe, GuestArg: []string{GuestCommand}, Limits: Limits{Disk: limit}})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			for _, path := range []string{"/dev/fill", "/dev/shm/fill"} {
				r := run(t, sb, fmt.Sprintf(`head -c 50M /dev/zero > %s 2>/dev/null; stat -c %%s %s 2>/dev/null || echo 0`, path, path))
				size, err := strconv.ParseInt(strings.TrimSpace(r.Stdout), 10, 64)
				if err != nil {
					t.Fatalf("%s: %+v", path, r)
				}
				if size > limit {
					t.Errorf("%s took %d bytes past a disk limit of %d", path, size, limit)
				}
				run(t, sb, "rm -f "+path)
			}
		})
	}
}
