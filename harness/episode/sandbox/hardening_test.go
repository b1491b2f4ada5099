//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// capsScript prints what a command inside holds: its uid, effective and permitted
// capabilities, how many capabilities its bounding set still has, and no_new_privs.
const capsScript = `python3 - <<'PY'
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
bounding = [c for c in range(64) if libc.prctl(23, c, 0, 0, 0) == 1]  # PR_CAPBSET_READ
class Header(ctypes.Structure): _fields_ = [("version", ctypes.c_uint32), ("pid", ctypes.c_int)]
class Data(ctypes.Structure): _fields_ = [("eff", ctypes.c_uint32), ("prm", ctypes.c_uint32), ("inh", ctypes.c_uint32)]
data = (Data * 2)()
libc.capget(ctypes.byref(Header(0x20080522, 0)), data)
eff = data[0].eff | data[1].eff << 32
prm = data[0].prm | data[1].prm << 32
print("uid=%d eff=%x prm=%x bounding=%d nnp=%d" % (os.getuid(), eff, prm, len(bounding), libc.prctl(39, 0, 0, 0, 0)))
PY`

// assertNoCapabilities: a command of sb has no capability, none in its bounding set, and
// no_new_privs; it returns the command's uid.
func assertNoCapabilities(t *testing.T, sb Sandbox) int {
	t.Helper()
	r := run(t, sb, capsScript)
	var uid, bounding, nnp int
	var eff, prm string
	if _, err := fmt.Sscanf(r.Stdout, "uid=%d eff=%s prm=%s bounding=%d nnp=%d", &uid, &eff, &prm, &bounding, &nnp); err != nil {
		t.Fatalf("%v: %+v", err, r)
	}
	if got, want := fmt.Sprintf("eff=%s prm=%s bounding=%d nnp=%d", eff, prm, bounding, nnp), "eff=0 prm=0 bounding=0 nnp=1"; got != want {
		t.Fatalf("capabilities inside: %s, want %s", got, want)
	}
	return uid
}

func TestNoCapabilitiesInside(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			uid := assertNoCapabilities(t, sb)
			if os.Geteuid() == 0 && b.Name() == NameBwrap && uid != SandboxUID {
				t.Fatalf("commands run as uid %d, want %d (nobody) when aa-grade is root", uid, SandboxUID)
			}
		})
	}
}

func TestNoMountRemountOrPrivilegedCall(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sb := start(t, b, f)
			attacks := []struct{ name, cmd string }{
				{"remount /usr read-write", "mount -o remount,bind,rw /usr && touch /usr/aa-grade-escape"},
				{"remount a snapshot file read-write", "mount -o remount,bind,rw k8s_events_raw.tsv && echo x >> k8s_events_raw.tsv"},
				{"mount a tmpfs", "mount -t tmpfs none alerts"},
				{"nested user namespace", "unshare -Ur true"},
				{"new mount namespace", "unshare -m true"},
				{"write a sysctl", "echo evil > /proc/sys/kernel/domainname"},
				{"sethostname", "hostname evil"},
				{"real-time scheduling", `python3 -c "import os; os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))"`},
				{"load a BPF program", `python3 -c "
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
attr = ctypes.create_string_buffer(128)
r = libc.syscall(321, 5, attr, 128)  # bpf(BPF_PROG_LOAD) on amd64
sys.exit(0 if r >= 0 or ctypes.get_errno() != 1 else 1)  # EPERM: refused"`},
			}
			for _, a := range attacks {
				if r := run(t, sb, a.cmd); r.ExitCode == 0 {
					t.Errorf("%s worked: %+v", a.name, r)
				}
			}
			if _, err := os.Stat("/usr/aa-grade-escape"); err == nil {
				os.Remove("/usr/aa-grade-escape")
				t.Error("the host's /usr was written")
			}
			if b, _ := os.ReadFile(filepath.Join(f.snapshot, "k8s_events_raw.tsv")); strings.Contains(string(b), "x\n") {
				t.Error("a snapshot file was changed")
			}
			if name, _ := os.ReadFile("/proc/sys/kernel/domainname"); strings.TrimSpace(string(name)) == "evil" {
				t.Error("a host sysctl was written")
			}
			if os.Geteuid() == 0 && b.Name() == NameBwrap {
				// As root the sandbox's /proc is made read-only but for the processes' folders.
				r := run(t, sb, `for p in sys sysrq-trigger pressure fs irq bus kmsg; do
  [ -e /proc/$p ] && ! grep -q " /proc/$p ro," /proc/self/mountinfo && echo "/proc/$p is writable"
done; grep -c ' /proc/sys ro,' /proc/self/mountinfo`)
				if r.Stdout != "1\n" {
					t.Errorf("/proc beyond the processes' folders is not read-only: %q", r.Stdout)
				}
			}
		})
	}
}

func TestNoConnectionToHostSockets(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sockets := listenHostUnixSockets(t, f.scratch)
			sb := start(t, b, f)
			sockets.assertUnreachable(t, sb)
			r := run(t, sb, `python3 -c "import socket; a, b = socket.socketpair(); a.send(b'ok'); print(b.recv(2).decode())"`)
			if r.Stdout != "ok\n" {
				t.Fatalf("socketpair, which the sandbox keeps, failed: %+v", r)
			}
		})
	}
}

// hostUnixSockets are a host service's sockets: one in the workspace (the one host folder
// every backend shows) and an abstract one, stand-ins for docker.sock, D-Bus or a tmux server.
type hostUnixSockets struct {
	abstract string
	accepted chan string
}

func listenHostUnixSockets(t *testing.T, scratch string) hostUnixSockets {
	t.Helper()
	path := filepath.Join(scratch, "host.sock")
	h := hostUnixSockets{abstract: fmt.Sprintf("@aa-grade-test-%d", os.Getpid()), accepted: make(chan string, 2)}
	for _, addr := range []string{path, h.abstract} {
		l, err := net.Listen("unix", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l.Close() })
		go func() {
			if c, err := l.Accept(); err == nil {
				c.Close()
				h.accepted <- addr
			}
		}()
	}
	os.Chmod(path, 0o777)
	return h
}

// assertUnreachable: no command of sb connects to either socket.
func (h hostUnixSockets) assertUnreachable(t *testing.T, sb Sandbox) {
	t.Helper()
	for _, addr := range []string{"host.sock", `\0` + h.abstract[1:]} {
		r := run(t, sb, fmt.Sprintf(`python3 -c "import socket; s = socket.socket(socket.AF_UNIX); s.connect('%s'); print('connected')"`, addr))
		if strings.Contains(r.Stdout, "connected") {
			t.Errorf("connected to %s: %+v", addr, r)
		}
	}
	select {
	case addr := <-h.accepted:
		t.Fatalf("the host socket %s saw a connection", addr)
	case <-time.After(300 * time.Millisecond):
	}
}

func TestInheritedDescriptorsStayOutside(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("inherited secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	received := make(chan string, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		b := make([]byte, 64)
		n, _ := c.Read(b)
		received <- string(b[:n])
	}()
	conn, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// As a CI runner leaves them: descriptors 77 and 78 without close-on-exec.
	file, err := unix.Open(secret, unix.O_RDONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	sock, err := conn.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	for fd, target := range map[int]int{file: 77, int(sock.Fd()): 78} {
		if err := unix.Dup2(fd, target); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(target) })
	}
	unix.Close(file)
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			// Starting a sandbox marks them close-on-exec: clear the flag again for each backend.
			for _, fd := range []int{77, 78} {
				if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, 0); err != nil {
					t.Fatal(err)
				}
			}
			sb := start(t, b, newFixture(t))
			r := run(t, sb, "cat <&77; echo leaked >&78")
			if strings.Contains(r.Stdout, "inherited secret") {
				t.Fatalf("an inherited file was read inside: %+v", r)
			}
			select {
			case got := <-received:
				t.Fatalf("an inherited socket carried %q out", got)
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}

// TestDetachedForkChainsDieWithTheEpisode: a chain of processes that each fork a successor in
// a new session and exit outruns a walk of /proc; none of it may outlive the sandbox.
func TestDetachedForkChainsDieWithTheEpisode(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			marker := fmt.Sprintf("1002.%d", os.Getpid())
			// Each hop starts its successor in a new session and exits at once.
			hop := fmt.Sprintf(`echo 'setsid bash hop.sh "$1" &' > hop.sh
setsid bash hop.sh %s >/dev/null 2>&1 &
sleep 0.5; echo started`, marker)
			t.Cleanup(func() { killProcessesWith(marker) })
			if r := run(t, sb, hop); r.Stdout != "started\n" {
				t.Fatalf("%+v", r)
			}
			sb.Close()
			if left := processesWith(marker); len(left) > 0 {
				t.Fatalf("%d processes outlived the sandbox, e.g. %s", len(left), left[0])
			}
		})
	}
}

// TestLeftoversOfDeadRunsAreCleaned: a scratch folder and (as root) a cgroup with a process
// still in it, named after an aa-grade that is gone, are removed; a live one's are not.
func TestLeftoversOfDeadRunsAreCleaned(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	dead := fmt.Sprintf("%s999999999-%d", leftoverPrefix, os.Getpid()) // no such pid: a dead run
	live := leftoverPrefix + ownerTag()
	for _, name := range []string{dead, live} {
		if err := os.MkdirAll(filepath.Join(os.TempDir(), name, "episode-1"), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	var cgroup string
	var sleeper *os.Process
	if parents := cgroups().parents; len(parents) > 0 {
		cgroup = filepath.Join(parents[0], dead+"-1")
		if err := os.Mkdir(cgroup, 0o755); err != nil {
			t.Fatal(err)
		}
		p, err := os.StartProcess("/bin/sleep", []string{"sleep", "1000"}, &os.ProcAttr{})
		if err != nil {
			t.Fatal(err)
		}
		sleeper = p
		if err := os.WriteFile(filepath.Join(cgroup, "cgroup.procs"), []byte(strconv.Itoa(p.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	removed := CleanLeftovers()
	if _, err := os.Stat(filepath.Join(os.TempDir(), dead)); err == nil {
		t.Errorf("a dead run's scratch folder is still there (removed %v)", removed)
	}
	if _, err := os.Stat(filepath.Join(os.TempDir(), live)); err != nil {
		t.Errorf("a live run's scratch folder was removed: %v", err)
	}
	if cgroup != "" {
		done := make(chan *os.ProcessState, 1)
		go func() { st, _ := sleeper.Wait(); done <- st }()
		select {
		case st := <-done:
			if ws, ok := st.Sys().(syscall.WaitStatus); !ok || ws.Signal() != syscall.SIGKILL {
				t.Errorf("the process left in the cgroup ended with %v, want SIGKILL", st)
			}
		case <-time.After(5 * time.Second):
			sleeper.Kill()
			t.Error("the process left in a dead run's cgroup was not killed")
		}
		if _, err := os.Stat(cgroup); err == nil {
			t.Error("a dead run's cgroup is still there")
		}
	}
	if len(removed) == 0 {
		t.Fatal("nothing reported removed")
	}
}

// killProcessesWith kills the host processes whose command line holds marker (what a failed
// test left running), until none is left.
func killProcessesWith(marker string) {
	for range 100 {
		left := processesWith(marker)
		if len(left) == 0 {
			return
		}
		for _, p := range left {
			pid, _, _ := strings.Cut(p, ":")
			if n, err := strconv.Atoi(pid); err == nil {
				syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}
}

// TestScopedGuestEndsItsProcessesWhenAaGradeDies takes Landlock's path for machines without
// namespaces: the guest, in a signal-scoped domain, kills everything of the episode as soon
// as its input ends, which is what the kernel does to it when aa-grade dies; processes of the
// same user outside the sandbox live on.
func TestScopedGuestEndsItsProcessesWhenAaGradeDies(t *testing.T) {
	l := Landlock{}
	if l.Available() != nil || !landlockScopesSignals() {
		t.Skip("needs Landlock ABI 6")
	}
	saved := landlockNamespaces
	landlockNamespaces = func() *syscall.SysProcAttr { return nil }
	t.Cleanup(func() { landlockNamespaces = saved })
	marker := fmt.Sprintf("1004.%d", os.Getpid())
	bystander, err := os.StartProcess("/bin/sleep", []string{"sleep", marker + "1"}, &os.ProcAttr{})
	if err != nil {
		t.Fatal(err)
	}
	defer bystander.Kill()
	t.Cleanup(func() { killProcessesWith(marker) })
	sb := start(t, l, newFixture(t))
	if end := sb.(*session).peer.(*processPeer).end; end != endGuestKillsAll {
		t.Fatalf("ending = %v, want the guest's kill", end)
	}
	r := run(t, sb, fmt.Sprintf(`echo 'setsid bash hop.sh "$1" &' > hop.sh
setsid bash hop.sh %s2 >/dev/null 2>&1 & setsid sleep %s2 >/dev/null 2>&1 & sleep 0.3; echo started`, marker, marker))
	if r.Stdout != "started\n" {
		t.Fatalf("%+v", r)
	}
	sb.(*session).stdin.Close() // as the kernel does when aa-grade dies
	deadline := time.Now().Add(5 * time.Second)
	for len(processesWith(marker+"2")) > 0 && time.Now().Before(deadline) {
	}
	if left := processesWith(marker + "2"); len(left) > 0 {
		t.Fatalf("%d processes outlived the guest's input, e.g. %s", len(left), left[0])
	}
	if alive := processesWith(marker + "1"); len(alive) != 1 {
		t.Fatalf("the guest's kill reached a process outside the sandbox: %v", alive)
	}
}

// TestLimitsAreErrorsTheModelSees fills the disk, the file count and the memory of an episode
// with small limits: each is an error of the command, the sandbox goes on, the host is not
// touched. Limits a backend does not enforce here (Guarantees says which) are skipped, but as
// root every backend bounds disk and files, and so does Landlock wherever it has namespaces.
// The temporary folder is $TMPDIR: /tmp in bwrap and docker, one inside the workspace in
// Landlock.
func TestLimitsAreErrorsTheModelSees(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			holds := map[string]bool{}
			for _, g := range Guarantees(b) {
				holds[g.Name] = g.Holds
			}
			if os.Geteuid() == 0 || b.Name() == NameLandlock && landlockNamespaces() != nil {
				if !holds[GuaranteeDiskLimit] || !holds[GuaranteeInodeLimit] {
					t.Errorf("disk limit %v, file count limit %v: both must hold here", holds[GuaranteeDiskLimit], holds[GuaranteeInodeLimit])
				}
			}
			f := newFixture(t)
			exe, _ := os.Executable()
			sb, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
				Limits: Limits{Memory: 200 << 20, Disk: 16 << 20}})
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			if holds[GuaranteeDiskLimit] {
				for _, dir := range []string{".", "$TMPDIR"} {
					r := run(t, sb, fmt.Sprintf("head -c 40M /dev/zero > %s/big; echo written=$(stat -c %%s %s/big); rm -f %s/big", dir, dir, dir))
					if !strings.Contains(r.Stderr, "No space left on device") || strings.Contains(r.Stdout, "written=41943040") {
						t.Errorf("40 MiB in %s with a 16 MiB disk limit: %+v", dir, r)
					}
				}
			}
			if holds[GuaranteeInodeLimit] {
				r := run(t, sb, `mkdir many && python3 -c "
import os
for i in range(10000):
    open('many/%d' % i, 'w').close()
"; ls many | wc -l; rm -rf many`)
				if !strings.Contains(r.Stderr, "No space left on device") || strings.Contains(r.Stdout, "10000") {
					t.Errorf("10,000 files with a limit of 4,096: %+v", r)
				}
			}
			if holds[GuaranteeMemoryLimit] {
				// Together: three processes of 100 MiB each cannot all live in 200 MiB.
				r := run(t, sb, `for i in 1 2 3; do python3 -c "
import time
b = bytearray(100 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
print('allocated', flush=True)
time.sleep(2)" & done; wait`)
				if !strings.Contains(r.Stderr, "Killed") {
					t.Errorf("three processes of 100 MiB lived together under a 200 MiB memory limit: %+v", r)
				}
				if holds[GuaranteeDiskLimit] {
					// Files in memory count: with 64 MiB for processes and 64 MiB for files, 60 MiB
					// of files leave no room for a process of 100 MiB; the guest lives on.
					small, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: t.TempDir(), Guest: exe, GuestArg: []string{GuestCommand},
						Limits: Limits{Memory: 64 << 20, Disk: 64 << 20}})
					if err != nil {
						t.Fatal(err)
					}
					defer small.Close()
					r := run(t, small, `head -c 30M /dev/zero > "$TMPDIR/big" && head -c 30M /dev/zero > big && python3 -c "
b = bytearray(100 * 1024 * 1024)
for i in range(0, len(b), 4096): b[i] = 1
print('allocated')"`)
					if strings.Contains(r.Stdout, "allocated") || r.ExitCode != 128+int(syscall.SIGKILL) {
						t.Errorf("60 MiB of tmpfs files and a process of 100 MiB under 128 MiB: %+v", r)
					}
					if r := run(t, small, `rm "$TMPDIR/big" big; echo alive`); r.Stdout != "alive\n" {
						t.Errorf("the sandbox did not survive: %+v", r)
					}
				}
			}
			if r := run(t, sb, "echo alive"); r.Stdout != "alive\n" {
				t.Fatalf("the sandbox did not survive its limits: %+v", r)
			}
		})
	}
}

// TestLandlockWorkspaceIsABoundedTmpfsTheHostDoesNotSee: where the guest has a mount namespace,
// the workspace is a tmpfs of the disk limit's size, mounted there only: the host's mount
// table does not get it (it would outlive the episode), and its folder keeps what aa-grade put
// in it, while the sandbox has the links to the snapshot and its temporary folder.
func TestLandlockWorkspaceIsABoundedTmpfsTheHostDoesNotSee(t *testing.T) {
	l := Landlock{}
	if err := l.Available(); err != nil {
		t.Skip(err)
	}
	if !hasMountNamespace(landlockNamespaces()) {
		t.Skip("no mount namespace for the Landlock guest here")
	}
	f := newFixture(t)
	exe, _ := os.Executable()
	sb, err := l.Start(context.Background(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"}, Scratch: f.scratch,
		Guest: exe, GuestArg: []string{GuestCommand}, Limits: Limits{Disk: 32 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	r := run(t, sb, `stat -f -c '%T %b %S %c' . "$TMPDIR"; cat k8s_events_raw.tsv | wc -l; echo new > made-inside; ls -A`)
	want := fmt.Sprintf("tmpfs %d 4096 %d\ntmpfs %d 4096 %d\n2\n", (32<<20)/4096, 4096, (32<<20)/4096, 4096)
	if !strings.HasPrefix(r.Stdout, want) || !strings.Contains(r.Stdout, ".tmp\nalerts\nk8s_events_raw.tsv\nmade-inside\n") {
		t.Fatalf("inside, want the workspace and its temporary folder on one tmpfs of 32 MiB and 4,096 files, the snapshot readable:\n%s%s", r.Stdout, r.Stderr)
	}
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(mounts), " "+f.scratch+" ") {
		t.Fatalf("the workspace's tmpfs reached the host's mount table:\n%s", mounts)
	}
	if _, err := os.Lstat(filepath.Join(f.scratch, "made-inside")); err == nil {
		t.Fatal("a file made inside landed in the host's folder")
	}
	if b, err := sb.ReadFile(context.Background(), "made-inside", 100); err != nil || string(b) != "new\n" {
		t.Fatalf("aa-grade reads the workspace through the guest: %q, %v", b, err)
	}
}

// TestLandlockKeepsItsNamespacesWhereTheWorkspaceCannotBeMounted: where a mount namespace can
// be made but the guest cannot mount in it (a security module refusing mount; here a guest
// that fails), Landlock still gets its other namespaces, with the workspace a host folder,
// rather than a sandbox that fails at every start.
func TestLandlockKeepsItsNamespacesWhereTheWorkspaceCannotBeMounted(t *testing.T) {
	if landlockNamespaces() == nil {
		t.Skip("no namespaces for the Landlock guest here")
	}
	exe, _ := os.Executable()
	if got := findLandlockNamespaces(exe, []string{GuestCommand}); !hasMountNamespace(got) {
		t.Fatalf("the guest mounts its workspace here, yet no mount namespace: %+v", got)
	}
	got := findLandlockNamespaces("/bin/false", nil)
	if got == nil {
		t.Fatalf("with a guest that cannot mount: no namespaces, want the pid one")
	}
	if hasMountNamespace(got) {
		t.Errorf("with a guest that cannot mount: a mount namespace: %+v", got)
	}
	if got.Cloneflags&syscall.CLONE_NEWPID == 0 {
		t.Errorf("with a guest that cannot mount: no pid namespace: %+v", got)
	}
}
