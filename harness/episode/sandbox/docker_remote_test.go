//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/dockerapi"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// dockerOverTCP serves the local daemon's socket on a TCP port of 127.0.0.1, as a daemon in a
// VM or on another machine is reached (DOCKER_HOST=tcp://...), half-closes passed on.
func dockerOverTCP(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	pass := func(dst, src net.Conn) {
		io.Copy(dst, src)
		dst.(interface{ CloseWrite() error }).CloseWrite()
	}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				u, err := net.Dial("unix", "/var/run/docker.sock")
				if err != nil {
					return
				}
				defer u.Close()
				done := make(chan struct{})
				go func() { pass(u, c); close(done) }()
				pass(c, u)
				<-done
			}()
		}
	})
	return "tcp://" + ln.Addr().String()
}

// TestDockerOverTCPBindsNoHostPath: an episode against a daemon reached over TCP gets its
// guest, the task's files and the agent folder through the Engine API, not bound from host
// paths (which a remote daemon would not have): the container's mounts, as the daemon reports
// them, are its input volume, read-only, and tmpfs only. The task's files and the agent
// folder are there, read-only and not removable; the submission comes back; the volume goes
// with the episode.
func TestDockerOverTCPBindsNoHostPath(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	t.Setenv("DOCKER_HOST", dockerOverTCP(t))
	d := &Docker{Image: img}
	if err := d.Available(); err != nil {
		t.Fatal(err)
	}
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
	sb, err := d.Start(context.Background(), Spec{Snapshot: f.snapshot, Hide: []string{"ground_truth.yaml"}, Scratch: f.scratch,
		Guest: exe, GuestArg: []string{GuestCommand}, AgentDir: agentDir})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	c := sb.(*session).peer.(*container)
	var inspect struct {
		Mounts []struct {
			Type, Source, Destination string
			RW                        bool
		}
	}
	if _, err := d.client.Do(context.Background(), http.MethodGet, "/containers/"+c.id+"/json", nil, &inspect); err != nil {
		t.Fatal(err)
	}
	if len(inspect.Mounts) != 1 {
		t.Errorf("mounts %+v, want the input volume alone", inspect.Mounts)
	}
	for _, m := range inspect.Mounts {
		if m.Type != "volume" || m.Destination != inputsAt || m.RW {
			t.Errorf("mount %+v, want the input volume read-only at %s", m, inputsAt)
		}
	}
	r := run(t, sb, `cat k8s_events_raw.tsv | wc -l; /opt/agent/run; ls -A /opt/agent; echo '{}' > agent_output.json; echo done`)
	if r.Stdout != "2\nagent-ran\nbin\nrun\ndone\n" {
		t.Errorf("the task and the agent folder inside: %+v", r)
	}
	for _, cmd := range []string{
		"echo x >> k8s_events_raw.tsv", "rm -f k8s_events_raw.tsv", "mv alerts elsewhere", "chmod 666 k8s_events_raw.tsv",
		"touch /opt/agent/x", "echo x >> /opt/agent/bin/agent.sh", "ls /run/aa-grade/task", "cat /run/aa-grade/agent >/dev/null",
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
	_, err = d.client.Do(context.Background(), http.MethodGet, "/volumes/"+c.volume, nil, nil)
	if status := (*dockerapi.Error)(nil); !errors.As(err, &status) || status.Code != http.StatusNotFound {
		t.Errorf("the episode's volume after it: %v, want 404", err)
	}
}

// TestDockerVolumesOfDeadRunsAreRemoved: the input volume of an episode whose run died goes at
// the next start, with its containers; one of a live run stays.
func TestDockerVolumesOfDeadRunsAreRemoved(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	create := func(name, owner string) {
		if out, err := exec.Command("docker", "volume", "create", "--label", ownerLabel+"="+owner, name).CombinedOutput(); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		t.Cleanup(func() { exec.Command("docker", "volume", "rm", "-f", name).Run() })
	}
	exists := func(name string) bool { return exec.Command("docker", "volume", "inspect", name).Run() == nil }
	dead, live := fmt.Sprintf("aa-grade-test-dead-%d", os.Getpid()), fmt.Sprintf("aa-grade-test-live-%d", os.Getpid())
	create(dead, "999999999-1")
	create(live, ownerTag())
	CleanLeftovers()
	if exists(dead) {
		t.Error("the volume of a dead run is still there")
	}
	if !exists(live) {
		t.Error("the volume of a live run was removed")
	}
}
