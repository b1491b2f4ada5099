//go:build linux

package sandbox

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/guest"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// The test binary doubles as the guest, as aa-grade does: `<binary> __sandbox-guest`.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == CgroupExecCommand {
		fmt.Fprintln(os.Stderr, RunCgroupExec(os.Args[2:]))
		os.Exit(1)
	}
	if len(os.Args) > 1 && os.Args[1] == GuestCommand {
		if err := guest.Run(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

const secretValue = "sk-ant-test-secret-9f8e7d"

// answerMarker is in the test's ground truth; made at run time so that the test binary, which
// the sandbox shows as its guest, does not contain it.
var answerMarker = fmt.Sprintf("answer-group-%d", os.Getpid())

// fixture is a snapshot with a ground truth, as a task folder holds it.
type fixture struct {
	snapshot, scratch, groundTruth string
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	snap := filepath.Join(dir, "Scenario-1")
	testfs.Write(t, filepath.Join(snap, "alerts", "alerts_at_2025-12-15T17-30-49.329092.json"), `[{"labels":{"alertname":"Watchdog"}}]`)
	testfs.Write(t, filepath.Join(snap, "k8s_events_raw.tsv"), "Timestamp\tBody\n2025-12-15 17:24:44\tevent\n")
	gt := filepath.Join(snap, "ground_truth.yaml")
	testfs.Write(t, gt, "groups: [{id: "+answerMarker+", kind: Pod, root_cause: true}]\n")
	scratch := filepath.Join(dir, "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	return fixture{snapshot: snap, scratch: scratch, groundTruth: gt}
}

func start(t *testing.T, b Backend, f fixture) Sandbox {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("ANTHROPIC_API_KEY", secretValue) // in aa-grade's environment, never the sandbox's
	sb, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"}, Scratch: f.scratch,
		Guest: exe, GuestArg: []string{GuestCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return sb
}

func run(t *testing.T, sb Sandbox, cmd string) Result {
	t.Helper()
	res, err := sb.Run(context.Background(), cmd, 20*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	return res
}

// backends lists the backends that work here; under CI an isolating one must.
func backends(t testing.TB, isolatingOnly bool) []Backend {
	var out []Backend
	for _, b := range Backends() {
		if isolatingOnly && b.Name() == NameNone {
			continue
		}
		if d, ok := b.(*Docker); ok {
			// The image CI builds from Debian packages (.ci/run); elsewhere docker is tried
			// only when one is named.
			if d.Image = os.Getenv("AA_GRADE_TEST_IMAGE"); d.Image == "" {
				if os.Getenv("CI") != "" && os.Geteuid() == 0 {
					t.Fatal("AA_GRADE_TEST_IMAGE is not set under CI")
				}
				t.Logf("skipping docker: no AA_GRADE_TEST_IMAGE")
				continue
			}
		}
		if err := b.Available(); err != nil {
			if os.Getenv("CI") != "" && (b.Name() != NameDocker || os.Geteuid() == 0) {
				t.Fatalf("backend %s unavailable under CI: %v", b.Name(), err)
			}
			t.Logf("skipping %s: %v", b.Name(), err)
			continue
		}
		t.Cleanup(func() { Release(b) }) // after the sandboxes' own cleanups, registered later
		out = append(out, b)
	}
	return out
}

func TestShellBasics(t *testing.T) {
	for _, b := range backends(t, false) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sb := start(t, b, f)
			r := run(t, sb, `pwd; cat k8s_events_raw.tsv | wc -l; echo oops >&2; exit 3`)
			if r.ExitCode != 3 {
				t.Errorf("exit code %d, want 3", r.ExitCode)
			}
			if want := sb.Workdir() + "\n2\n"; !strings.HasPrefix(r.Stdout, want) {
				t.Errorf("stdout %q, want it to start %q", r.Stdout, want)
			}
			if r.Stderr != "oops\n" {
				t.Errorf("stderr %q, want %q", r.Stderr, "oops\n")
			}
			if r.TimedOut {
				t.Errorf("timed out")
			}
			if t.Failed() {
				t.Fatalf("result = %+v", r)
			}
			r = run(t, sb, `ls; echo '{"contributing_factors":[]}' > agent_output.json`)
			if r.ExitCode != 0 {
				t.Errorf("the listing's exit code %d, want 0", r.ExitCode)
			}
			textcheck.Has(t, "the listing", r.Stdout, "alerts")
			if !textcheck.Lacks(t, "the listing", r.Stdout, "ground_truth") || t.Failed() {
				t.FailNow()
			}
			if b, err := sb.ReadFile(context.Background(), "agent_output.json", 1<<20); err != nil || !strings.Contains(string(b), "contributing_factors") {
				t.Fatalf("the submission cannot be read back: %q %v", b, err)
			}
			if r := run(t, sb, `env`); strings.Contains(r.Stdout, secretValue) || !strings.Contains(r.Stdout, "HOME=") {
				t.Fatalf("environment = %q", r.Stdout)
			}
		})
	}
}

func TestTimeoutsAndLeftovers(t *testing.T) {
	for _, b := range backends(t, false) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			began := time.Now()
			r, err := sb.Run(context.Background(), "while true; do :; done", 500*time.Millisecond)
			took := time.Since(began)
			if err != nil {
				t.Fatalf("endless loop: %v", err)
			}
			if !r.TimedOut {
				t.Errorf("endless loop not timed out: %+v", r)
			}
			if took > 5*time.Second {
				t.Errorf("endless loop stopped after %v, want within 5s", took)
			}
			if t.Failed() {
				t.FailNow()
			}
			began = time.Now()
			r = run(t, sb, "sleep 1000 & echo $!")
			if r.ExitCode != 0 || time.Since(began) > 5*time.Second {
				t.Fatalf("background job: %+v after %v", r, time.Since(began))
			}
			pid := strings.TrimSpace(r.Stdout)
			if r := run(t, sb, "kill -0 "+pid+" 2>/dev/null && echo alive || echo gone"); r.Stdout != "gone\n" {
				t.Fatalf("the background job outlived its command: %q", r.Stdout)
			}
			began = time.Now()
			marker := fmt.Sprintf("1001.%d", os.Getpid()) // a sleep no other test run starts
			r = run(t, sb, fmt.Sprintf("setsid sleep %s & nohup sleep %s >/dev/null 2>&1 & sleep 0.3; echo started", marker, marker))
			// The nohup job stayed in the command's process group and died with it; the setsid
			// one left it, and lives until the sandbox ends.
			if got := processesWith(marker); len(got) != 1 {
				t.Fatalf("want the setsid job alive, and only it: %v", got)
			}
			if r.Stdout != "started\n" || time.Since(began) > 5*time.Second {
				t.Fatalf("detached jobs: %+v after %v", r, time.Since(began))
			}
			sb.Close()
			if leftovers := processesWith(marker); len(leftovers) > 0 {
				t.Fatalf("processes outlived the sandbox: %v", leftovers)
			}
		})
	}
}

// processesWith lists host processes whose command line contains marker.
func processesWith(marker string) []string {
	var found []string
	time.Sleep(200 * time.Millisecond)
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), marker) {
			stat, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
			found = append(found, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " ")+" ("+strings.Join(strings.Fields(string(stat))[2:5], " ")+")")
		}
	}
	return found
}

func TestOutputFloodIsCut(t *testing.T) {
	for _, b := range backends(t, false) {
		t.Run(b.Name(), func(t *testing.T) {
			sb := start(t, b, newFixture(t))
			r := run(t, sb, "head -c 200000000 /dev/zero | tr '\\0' x; echo; printf 'e%.0s' $(seq 30000) >&2")
			if r.StdoutChars != 200000001 {
				t.Errorf("stdout: %d characters, want 200000001", r.StdoutChars)
			}
			if kept := len([]rune(r.Stdout)); kept > shellspec.OutputLimit+200 {
				t.Errorf("stdout: kept %d characters, want at most %d", kept, shellspec.OutputLimit+200)
			}
			if !strings.Contains(r.Stdout, "200000001 characters in all") {
				t.Errorf("stdout does not say how many characters it had: %.200q", r.Stdout)
			}
			if t.Failed() {
				t.FailNow()
			}
			if r.StderrChars != 30000 || !strings.Contains(r.Stderr, "limit 20000") {
				t.Fatalf("stderr: %d characters: %.200q", r.StderrChars, r.Stderr)
			}
		})
	}
}

// TestEscapes is the escape suite: each case is an attack that must fail, in every isolating
// backend.
func TestEscapes(t *testing.T) {
	for _, b := range backends(t, true) {
		t.Run(b.Name(), func(t *testing.T) {
			f := newFixture(t)
			sb := start(t, b, f)

			t.Run("tcp", func(t *testing.T) { assertNoTCPToHost(t, sb) })
			t.Run("udp", func(t *testing.T) { assertNoUDPToHost(t, sb) })
			t.Run("dns", func(t *testing.T) { assertNoDNS(t, sb) })
			t.Run("secrets", func(t *testing.T) {
				home, _ := os.UserHomeDir()
				for _, path := range []string{"/etc/shadow", "/root", home, f.groundTruth, filepath.Join(sb.Workdir(), "ground_truth.yaml"), os.TempDir()} {
					r := run(t, sb, fmt.Sprintf("ls -la %q/ 2>/dev/null | grep -v -E '^total|[.]$' | head -3; cat %q 2>/dev/null | head -c 100", path, path))
					if strings.TrimSpace(r.Stdout) != "" {
						t.Errorf("%s is readable: %q", path, r.Stdout)
					}
				}
				r := run(t, sb, "cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c sk-ant; grep -rl "+answerMarker+" / --exclude-dir=proc --exclude-dir=sys --exclude-dir=usr --exclude-dir=dev 2>/dev/null | head -3")
				if strings.TrimSpace(r.Stdout) != "0" {
					t.Errorf("a secret or the answer key is reachable: %q", r.Stdout)
				}
			})
			t.Run("writes", func(t *testing.T) {
				before, _ := os.ReadFile(filepath.Join(f.snapshot, "k8s_events_raw.tsv"))
				r := run(t, sb, "echo x >> k8s_events_raw.tsv; rm -f alerts/*.json; touch /usr/evil /etc/evil "+f.snapshot+"/evil; echo done")
				after, _ := os.ReadFile(filepath.Join(f.snapshot, "k8s_events_raw.tsv"))
				if string(before) != string(after) {
					t.Fatal("a snapshot file was changed")
				}
				if files, _ := filepath.Glob(filepath.Join(f.snapshot, "alerts", "*.json")); len(files) != 1 {
					t.Fatal("a snapshot file was deleted")
				}
				for _, p := range []string{"/usr/evil", "/etc/evil", filepath.Join(f.snapshot, "evil")} {
					if _, err := os.Stat(p); err == nil {
						os.Remove(p)
						t.Errorf("%s was written on the host", p)
					}
				}
				if !strings.Contains(r.Stdout, "done") {
					t.Fatalf("%+v", r)
				}
			})
			t.Run("episodes apart", func(t *testing.T) {
				other := newFixture(t)
				sb2 := start(t, b, other)
				run(t, sb2, "echo mine > private.txt")
				r := run(t, sb, fmt.Sprintf("cat private.txt %q/private.txt 2>/dev/null", other.scratch))
				if strings.Contains(r.Stdout, "mine") {
					t.Fatal("one episode read another's file")
				}
			})
			t.Run("memory", func(t *testing.T) {
				r := run(t, sb, `python3 -c "b = bytearray(20 * 1024**3)" 2>&1 | tail -1`)
				if !strings.Contains(r.Stdout, "MemoryError") {
					t.Fatalf("a 20 GiB allocation was not refused: %+v", r)
				}
			})
			t.Run("fork bomb", func(t *testing.T) {
				if os.Geteuid() == 0 && !inPidsCgroup(sb) {
					t.Skip("running as root without a pids cgroup: nothing would stop the bomb (the unprivileged part of CI runs this)")
				}
				began := time.Now()
				res, err := sb.Run(context.Background(), "bomb() { bomb | bomb & }; bomb; sleep 5", 3*time.Second)
				if err != nil || time.Since(began) > 20*time.Second {
					t.Fatalf("fork bomb: %+v %v after %v", res, err, time.Since(began))
				}
			})
		})
	}
}

// assertNoTCPToHost: a command cannot connect to a listener on the host's 127.0.0.1.
func assertNoTCPToHost(t *testing.T, sb Sandbox) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	accepted := make(chan struct{}, 1)
	go func() {
		if c, err := l.Accept(); err == nil {
			c.Close()
			accepted <- struct{}{}
		}
	}()
	port := l.Addr().(*net.TCPAddr).Port
	r := run(t, sb, fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo connected", port))
	select {
	case <-accepted:
		t.Fatal("the listener saw a connection")
	case <-time.After(300 * time.Millisecond):
	}
	if strings.Contains(r.Stdout, "connected") || r.ExitCode == 0 {
		t.Fatalf("connect succeeded: %+v", r)
	}
}

// assertNoUDPToHost: a command cannot send a datagram to the host's 127.0.0.1.
func assertNoUDPToHost(t *testing.T, sb Sandbox) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	port := pc.LocalAddr().(*net.UDPAddr).Port
	run(t, sb, fmt.Sprintf("for i in 1 2 3; do echo hello > /dev/udp/127.0.0.1/%d; done", port))
	pc.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _, err := pc.ReadFrom(make([]byte, 64)); err == nil {
		t.Fatalf("the listener received %d bytes", n)
	}
}

// assertNoDNS: a command cannot resolve a name.
func assertNoDNS(t *testing.T, sb Sandbox) {
	t.Helper()
	r := run(t, sb, `python3 -c "import socket; print(socket.gethostbyname('example.com'))" || getent hosts example.com`)
	if r.ExitCode == 0 {
		t.Fatalf("name resolution worked: %+v", r)
	}
}

func TestProbeTools(t *testing.T) {
	for _, b := range backends(t, false) {
		t.Run(b.Name(), func(t *testing.T) {
			// The probe starts this test binary as its guest.
			tools, err := ProbeTools(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range []string{"bash", "grep", "python3"} {
				if !tools.Commands[name] {
					t.Errorf("no %s among the tools", name)
				}
			}
			if t.Failed() {
				t.Fatalf("tools = %+v", tools)
			}
			// The backends over the machine's /usr show every tool the machine has, also those
			// reached through /etc/alternatives (awk on Debian), as root too (commands as nobody).
			for _, name := range []string{"awk", "sed", "jq", "python3"} {
				if _, err := exec.LookPath(name); err == nil && b.Name() != NameDocker && !tools.Commands[name] {
					t.Errorf("%s is on this machine but not in the sandbox: %+v", name, tools.Commands)
				}
			}
			if _, ok := tools.Python["pandas"]; !ok {
				t.Fatalf("no pandas entry: %+v", tools.Python)
			}
			diffs := strings.Join(tools.Differences(), "; ")
			if tools.Python["drain3"] == "" && !strings.Contains(diffs, "drain3 missing") {
				t.Fatalf("differences = %s", diffs)
			}
		})
	}
}

// inPidsCgroup reports whether the sandbox's first process was started in a pids cgroup
// limited by aa-grade (a container always is).
func inPidsCgroup(sb Sandbox) bool {
	p, ok := sb.(*session).peer.(*processPeer)
	if !ok {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", p.cmd.Process.Pid))
	return err == nil && strings.Contains(string(b), ":pids:/aa-grade-")
}
