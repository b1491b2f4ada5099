//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/dockerapi"
	"github.com/aa-grade/aa-grade/internal/testsupport/dockerproxy"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// TestDockerOverTCPBindsNoHostPath: an episode against a daemon reached over TCP gets its
// guest, the task's files and the agent folder through the Engine API, not bound from host
// paths (which a remote daemon would not have): the container's mounts, as the daemon reports
// them, are the run's volume, read-only, and tmpfs only. The task's files and the agent folder
// are there, root's, read-only and not removable; the submission comes back. The next episode
// of the task shares the volume's folders, another task's adds a folder of its own; the volume
// and the container that filled it go when the run releases the backend.
func TestDockerOverTCPBindsNoHostPath(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	t.Setenv("DOCKER_HOST", dockerproxy.Start(t))
	d := &Docker{Image: img}
	if err := d.Available(); err != nil {
		t.Fatal(err)
	}
	released := false
	t.Cleanup(func() {
		if !released {
			Release(d)
		}
	})
	f := newFixture(t)
	agentDir := filepath.Join(t.TempDir(), "agent")
	testfs.Write(t, filepath.Join(agentDir, "bin", "agent.sh"), "echo agent-ran\n")
	if err := os.Chmod(filepath.Join(agentDir, "bin", "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("bin/agent.sh", filepath.Join(agentDir, "run")); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	startTask := func(snapshot string) (Sandbox, []dockerMount) {
		t.Helper()
		sb, err := d.Start(context.Background(), Spec{Snapshot: snapshot, Hide: []string{"ground_truth.yaml"},
			Scratch: t.TempDir(), Guest: exe, GuestArg: []string{GuestCommand}, AgentDir: agentDir})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { sb.Close() })
		return sb, containerMounts(t, d, sb)
	}
	sb, mounts := startTask(f.snapshot)
	if len(mounts) != 1 {
		t.Fatalf("mounts %+v, want the run's volume alone", mounts)
	}
	if m := mounts[0]; m.Type != "volume" {
		t.Errorf("mount %+v, want a volume", m)
	}
	if m := mounts[0]; m.Destination != inputsAt {
		t.Errorf("mount %+v, want it at %s", m, inputsAt)
	}
	if m := mounts[0]; m.RW {
		t.Errorf("mount %+v, want it read-only", m)
	}
	r := run(t, sb, `cat k8s_events_raw.tsv | wc -l; /opt/agent/run; ls -A /opt/agent; echo '{}' > agent_output.json; echo done`)
	if r.Stdout != "2\nagent-ran\nbin\nrun\ndone\n" {
		t.Errorf("the task and the agent folder inside: %+v", r)
	}
	r = run(t, sb, `stat -c '%n %u:%g %a' . k8s_events_raw.tsv alerts alerts/* /opt/agent /opt/agent/bin /opt/agent/bin/agent.sh`)
	want := ". 0:0 1777\nk8s_events_raw.tsv 0:0 444\nalerts 0:0 755\n" +
		"alerts/alerts_at_2025-12-15T17-30-49.329092.json 0:0 444\n" +
		"/opt/agent 0:0 755\n/opt/agent/bin 0:0 755\n/opt/agent/bin/agent.sh 0:0 555\n"
	if r.Stdout != want {
		t.Errorf("owners and modes in the container:\n%s\nwant\n%s", r.Stdout+r.Stderr, want)
	}
	for _, cmd := range []string{
		"echo x >> k8s_events_raw.tsv", "rm -f k8s_events_raw.tsv", "mv alerts elsewhere", "chmod 666 k8s_events_raw.tsv",
		"touch alerts/x", "touch /opt/agent/x", "echo x >> /opt/agent/bin/agent.sh", "rm -f /opt/agent/run",
		"ls /run/aa-grade/t*/", "ls /run/aa-grade/g*/", "ls /run/aa-grade/g*/agentdir/", "cat /run/aa-grade/g*/agent >/dev/null",
	} {
		if r := run(t, sb, cmd); r.ExitCode == 0 {
			t.Errorf("%s: succeeded: %+v", cmd, r)
		}
	}
	if r := run(t, sb, "cat k8s_events_raw.tsv; ls alerts"); !strings.HasSuffix(r.Stdout, "event\nalerts_at_2025-12-15T17-30-49.329092.json\n") {
		t.Errorf("the task's files after the attempts: %+v", r)
	}
	if b, err := sb.ReadFile(context.Background(), "agent_output.json", 100); err != nil || string(b) != "{}\n" {
		t.Errorf("the submission read back: %q %v", b, err)
	}
	sb.Close()

	// The next episode of the task: the same folders of the volume, the files as they were sent.
	sb2, mounts2 := startTask(f.snapshot)
	if !slices.Equal(mounts2, mounts) {
		t.Errorf("the next episode of the task mounts %+v, the first %+v", mounts2, mounts)
	}
	if r := run(t, sb2, "ls -A; cat k8s_events_raw.tsv; ls /run/aa-grade"); r.Stdout != "alerts\nk8s_events_raw.tsv\n"+
		"Timestamp\tBody\n2025-12-15 17:24:44\tevent\ng1\nt2\n" {
		t.Errorf("the next episode of the task sees %+v, want the task's files and the volume's guest and task only", r)
	}
	sb2.Close()
	// Another task: the same volume, a folder of its own.
	other := newFixture(t)
	testfs.Write(t, filepath.Join(other.snapshot, "k8s_events_raw.tsv"), "other\n")
	sb3, mounts3 := startTask(other.snapshot)
	if r := run(t, sb3, "cat k8s_events_raw.tsv; ls /run/aa-grade"); r.Stdout != "other\ng1\nt2\nt3\n" {
		t.Errorf("another task sees %+v", r)
	}
	sb3.Close()
	if !slices.Equal(mounts3, mounts) {
		t.Errorf("another task's episode mounts %+v, the first %+v", mounts3, mounts)
	}

	released = true
	Release(d)
	_, err := d.client.Do(context.Background(), http.MethodGet, "/volumes/"+mounts[0].Name, nil, nil)
	if status := (*dockerapi.Error)(nil); !errors.As(err, &status) || status.Code != http.StatusNotFound {
		t.Errorf("the volume %s after the run: %v, want 404", mounts[0].Name, err)
	}
	_, err = d.client.Do(context.Background(), http.MethodGet, "/containers/"+mounts[0].Name+"-fill/json", nil, nil)
	if status := (*dockerapi.Error)(nil); !errors.As(err, &status) || status.Code != http.StatusNotFound {
		t.Errorf("the container that filled the volume after the run: %v, want 404", err)
	}
}

// TestDockerCommandsRunUnprivileged: the agent's process (a program of the agent folder the
// model's command runs) runs as nobody with no capability in any set, no_new_privs (so no
// set-user-ID program raises it) and the syscall filter, and no process of the container is
// root's when the first command runs: the copier, the only root process, is gone.
func TestDockerCommandsRunUnprivileged(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	d := &Docker{Image: img}
	if img == "" || d.Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	t.Cleanup(func() { Release(d) })
	f := newFixture(t)
	agentDir := filepath.Join(t.TempDir(), "agent")
	testfs.Write(t, filepath.Join(agentDir, "agent.sh"),
		"grep -E '^(Uid|Gid|Groups|CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status\n")
	if err := os.Chmod(filepath.Join(agentDir, "agent.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	sb, err := d.Start(context.Background(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"},
		Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand}, AgentDir: agentDir})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	// The first command: every process of the container, by its ids.
	r := run(t, sb, `for s in /proc/[0-9]*/status; do grep -E '^(Uid|Gid):' "$s" | tr -s '\t' ' '; done | sort -u`)
	if r.Stdout != "Gid: 65534 65534 65534 65534\nUid: 65534 65534 65534 65534\n" {
		t.Errorf("the ids of the container's processes at the first command:\n%s", r.Stdout+r.Stderr)
	}
	r = run(t, sb, "/opt/agent/agent.sh | tr -s '\t' ' '")
	want := "Uid: 65534 65534 65534 65534\nGid: 65534 65534 65534 65534\nGroups: 65534 \n" +
		"CapInh: 0000000000000000\nCapPrm: 0000000000000000\nCapEff: 0000000000000000\n" +
		"CapBnd: 0000000000000000\nCapAmb: 0000000000000000\nNoNewPrivs: 1\nSeccomp: 2\n"
	if r.Stdout != want {
		t.Errorf("the agent's process:\n%s\nwant\n%s", r.Stdout+r.Stderr, want)
	}
}

type dockerMount struct {
	Type, Name, Source, Destination string
	RW                              bool
}

// containerMounts are the mounts of a docker sandbox's container, as the daemon tells them.
func containerMounts(t *testing.T, d *Docker, sb Sandbox) []dockerMount {
	t.Helper()
	var inspect struct{ Mounts []dockerMount }
	c := sb.(*session).peer.(*container)
	if _, err := d.client.Do(context.Background(), http.MethodGet, "/containers/"+c.id+"/json", nil, &inspect); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(inspect.Mounts, func(a, b dockerMount) int { return strings.Compare(a.Destination, b.Destination) })
	return inspect.Mounts
}

// TestDockerVolumesOfDeadRunsAreRemoved: the volumes of a run of this machine that died go at
// the next start, with its containers, those of a run before volumes had a host label too;
// one of a live run stays, and so does one of another machine or system (a remote daemon's
// other clients, Windows beside Linux), whose pid means nothing here.
func TestDockerVolumesOfDeadRunsAreRemoved(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	create := func(name string, labels ...string) string {
		name = fmt.Sprintf("aa-grade-test-%s-%d", name, os.Getpid())
		args := []string{"volume", "create"}
		for _, l := range labels {
			args = append(args, "--label", l)
		}
		if out, err := exec.Command("docker", append(args, name)...).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", name).Run() })
		return name
	}
	exists := func(name string) bool { return exec.Command("docker", "volume", "inspect", name).Run() == nil }
	const deadOwner = ownerLabel + "=999999999-1"
	dead := create("dead", deadOwner, hostLabel+"="+ownerHost())
	deadUnlabelled := create("dead-unlabelled", deadOwner)
	live := create("live", ownerLabel+"="+ownerTag(), hostLabel+"="+ownerHost())
	elsewhere := create("elsewhere", deadOwner, hostLabel+"=windows/another-machine")
	CleanLeftovers()
	for _, name := range []string{dead, deadUnlabelled} {
		if exists(name) {
			t.Errorf("%s, of a dead run, is still there", name)
		}
	}
	for _, name := range []string{live, elsewhere} {
		if !exists(name) {
			t.Errorf("%s, of a live run or of another machine, was removed", name)
		}
	}
}
