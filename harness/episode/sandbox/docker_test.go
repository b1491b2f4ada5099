//go:build linux

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestDockerLeftoversOfDeadRunsAreRemoved: a container labelled with an owner that is gone is
// removed at the next start, and reported as a container; one of a live owner is not. Other
// aa-grade processes (other test packages) clean up dead runs' containers too, at their own
// start: when one of them removes ours first, the case is tried again.
func TestDockerLeftoversOfDeadRunsAreRemoved(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	create := func(name, owner string) {
		if err := exec.Command("docker", "create", "--name", name, "--network", "none", "--label", ownerLabel+"="+owner, img, "true").Run(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", name).Run() })
	}
	exists := func(name string) bool { return exec.Command("docker", "inspect", name).Run() == nil }
	live := fmt.Sprintf("aa-grade-test-live-%d", os.Getpid())
	create(live, ownerTag())
	reported := false
	for try := 1; try <= 3 && !reported; try++ {
		dead := fmt.Sprintf("aa-grade-test-dead-%d-%d", os.Getpid(), try)
		create(dead, "999999999-1")
		removed := CleanLeftovers()
		reported = slices.Contains(removed, Leftover{LeftoverContainer, dead})
		if !reported && exists(dead) {
			t.Fatalf("the container of a dead run is still there (removed %v)", removed)
		}
	}
	if !reported {
		t.Error("the dead run's container was never reported as removed (three times another process removed it first?)")
	}
	if !exists(live) {
		t.Error("the container of a live run was removed")
	}
	// A container of another machine's run (a daemon that several serve): its pid is not ours
	// to judge.
	elsewhere := fmt.Sprintf("aa-grade-test-elsewhere-%d", os.Getpid())
	if err := exec.Command("docker", "create", "--name", elsewhere, "--network", "none", "--label", ownerLabel+"=999999999-1",
		"--label", hostLabel+"=windows/another-machine", img, "true").Run(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exec.Command("docker", "rm", "-f", elsewhere).Run() })
	CleanLeftovers()
	if !exists(elsewhere) {
		t.Error("the container of another machine's run was removed")
	}
}

// TestDockerSocketThatRefusesTheUserIsOneClearLine runs as a normal user (the unprivileged
// part of CI), for whom the daemon's socket is root's and the docker group's.
func TestDockerSocketThatRefusesTheUserIsOneClearLine(t *testing.T) {
	const socket = "/var/run/docker.sock"
	if _, err := os.Stat(socket); err != nil || os.Geteuid() == 0 {
		t.Skip("needs a Docker socket and a user it refuses")
	}
	t.Setenv("DOCKER_HOST", "unix://"+socket)
	err := (&Docker{}).Available()
	if err == nil {
		t.Skip("this user may use the Docker socket")
	}
	if !strings.Contains(err.Error(), "refuses this user (add it to the docker group") {
		t.Fatalf("err = %v", err)
	}
}

// TestBwrapRunsOverASavedImage: the test image saved by `docker save` becomes the episode's
// `/` under bwrap: its programs, not the host's, with the sandbox's confinement unchanged.
func TestBwrapRunsOverASavedImage(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	saved := filepath.Join(t.TempDir(), "image.tar")
	if out, err := exec.Command("docker", "save", "-o", saved, img).CombinedOutput(); err != nil {
		t.Fatalf("docker save: %v: %s", err, out)
	}
	b := &Bwrap{}
	if b.Available() != nil {
		t.Skip("no bwrap")
	}
	if err := UseImage(context.Background(), b, saved, t.TempDir(), nil); err != nil {
		t.Fatal(err)
	}
	sb := start(t, b, newFixture(t))
	r := run(t, sb, `command -v gcc >/dev/null && echo host-gcc; python3 -c "import pandas; print('pandas', pandas.__version__)"; ls k8s_events_raw.tsv`)
	textcheck.Has(t, "the output over the image", r.Stdout, "pandas ", "k8s_events_raw.tsv")
	if !textcheck.Lacks(t, "the output over the image", r.Stdout, "host-gcc") || t.Failed() {
		t.Fatalf("over the image: %+v", r)
	}
	if r := run(t, sb, capsScript); !strings.Contains(r.Stdout, "eff=0 prm=0 bounding=0 nnp=1") {
		t.Fatalf("capabilities over the image: %+v", r)
	}
	if r := run(t, sb, "touch /usr/x /etc/x 2>&1; echo x > agent_output.json && cat agent_output.json"); r.Stdout != "touch: cannot touch '/usr/x': Read-only file system\ntouch: cannot touch '/etc/x': Read-only file system\nx\n" {
		t.Fatalf("writes over the image: %q", r.Stdout)
	}
	// Host paths are shown over the image too, where it has no folder for them.
	programs, agentDir, _ := shownFixture(t)
	f := newFixture(t)
	exe, _ := os.Executable()
	shown, err := b.Start(context.Background(), Spec{Snapshot: f.snapshot, Scratch: f.scratch, Guest: exe, GuestArg: []string{GuestCommand},
		Programs: []string{programs}, AgentDir: agentDir})
	if err != nil {
		t.Fatal(err)
	}
	defer shown.Close()
	if r := run(t, shown, programs+"/tool && cat "+AgentDirPath+"/agent.sh && touch "+programs+"/x "+AgentDirPath+"/x"); r.Stdout != "tool-ran\necho agent-ran\n" || r.ExitCode == 0 {
		t.Fatalf("shown paths over the image: %+v", r)
	}
}

// TestImageMountPointStaysInTheImage: the mount point made in an unpacked image for a shown
// path never follows a link of the image out of its folder.
func TestImageMountPointStaysInTheImage(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "usr", "lib"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.Symlink(outside, filepath.Join(root, "usr", "lib", "node_modules"))
	os.Symlink("../../..", filepath.Join(root, "usr", "share"))
	b := &Bwrap{Rootfs: root, imageRef: "test"}
	for _, at := range []string{"/usr/lib/node_modules/pkg", "/usr/share/x/pkg"} {
		if err := b.mountPoint(shownPath{host: outside, at: at}); !errors.Is(err, ErrShownPath) {
			t.Errorf("%s: %v, want ErrShownPath", at, err)
		}
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("made outside the image: %v", entries)
	}
	if err := b.mountPoint(shownPath{host: outside, at: "/opt/agent"}); err != nil || !isDir(filepath.Join(root, "opt", "agent")) {
		t.Errorf("no mount point made: %v", err)
	}
}

func isDir(name string) bool {
	info, err := os.Stat(name)
	return err == nil && info.IsDir()
}

// TestStageGuestCopiesALinuxProgramOnce: the Linux guest a Mac or Windows host binds into the
// container is copied, executable and unreadable, into the cache (which the daemon's VM
// shares), once; what is no Linux program for the daemon's machine is refused.
func TestStageGuestCopiesALinuxProgramOnce(t *testing.T) {
	exe, _ := os.Executable()
	data, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	downloaded := filepath.Join(t.TempDir(), "aa-grade-linux-"+runtime.GOARCH)
	os.WriteFile(downloaded, data, 0o644) // as a browser saves it: not executable
	dir := t.TempDir()
	if err := checkLinuxProgram(downloaded, runtime.GOARCH); err != nil {
		t.Fatal(err)
	}
	staged, err := stageGuest(downloaded, dir)
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Stat(staged)
	if err != nil {
		t.Fatalf("staged %s: %v", staged, err)
	}
	if perm := info.Mode().Perm(); perm != 0o111 {
		t.Errorf("staged %s of mode %v, want 0111", staged, perm)
	}
	if info.Size() != int64(len(data)) {
		t.Errorf("staged %s of %d bytes, want %d", staged, info.Size(), len(data))
	}
	if !strings.HasPrefix(staged, dir) {
		t.Errorf("staged %s, want it under %s", staged, dir)
	}
	if t.Failed() {
		t.FailNow()
	}
	if again, err := stageGuest(downloaded, dir); err != nil || again != staged {
		t.Fatalf("second stage: %s %v", again, err)
	}
	if again, _ := os.Stat(staged); !os.SameFile(info, again) {
		t.Error("staged again")
	}
	other := map[string]string{"amd64": "arm64"}[runtime.GOARCH]
	if other == "" {
		other = "amd64"
	}
	if err := checkLinuxProgram(downloaded, other); err == nil || !strings.Contains(err.Error(), "not linux/"+other) {
		t.Errorf("another machine: %v", err)
	}
	text := filepath.Join(t.TempDir(), "aa-grade-linux-"+runtime.GOARCH)
	os.WriteFile(text, []byte("#!/bin/sh\n"), 0o755)
	if err := checkLinuxProgram(text, runtime.GOARCH); err == nil {
		t.Error("a script was staged as the guest")
	}
}

// TestDockerHostNamedPipe: npipe://, Docker Desktop's on Windows, is one clear line elsewhere.
func TestDockerHostNamedPipe(t *testing.T) {
	t.Setenv("DOCKER_HOST", "npipe:////./pipe/docker_engine")
	if err := (&Docker{}).Available(); err == nil || !strings.Contains(err.Error(), "npipe:// is a Windows named pipe") {
		t.Fatalf("on Linux: %v", err)
	}
}

// TestDockerContainerLogsNothing: the daemon keeps no log of an episode's container (its
// stdout carries every command's output and the relay's traffic), as its inspect says.
func TestDockerContainerLogsNothing(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	d := &Docker{Image: img}
	if img == "" || d.Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	t.Cleanup(func() { Release(d) })
	sb := start(t, d, newFixture(t))
	c := sb.(*session).peer.(*container)
	var inspect struct {
		HostConfig struct{ LogConfig struct{ Type string } }
	}
	if _, err := d.client.Do(context.Background(), "GET", "/containers/"+c.id+"/json", nil, &inspect); err != nil {
		t.Fatal(err)
	}
	if got := inspect.HostConfig.LogConfig.Type; got != "none" {
		t.Errorf("the episode's container logs with %q, want none", got)
	}
}
