//go:build linux

package sandbox

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestDockerLeftoversOfDeadRunsAreRemoved: a container labelled with an owner that is gone is
// removed at the next start; one of a live owner is not.
func TestDockerLeftoversOfDeadRunsAreRemoved(t *testing.T) {
	img := os.Getenv("AA_GRADE_TEST_IMAGE")
	if img == "" || (&Docker{Image: img}).Available() != nil {
		t.Skip("no docker here (AA_GRADE_TEST_IMAGE unset, or no daemon for this user)")
	}
	create := func(owner string) string {
		out, err := exec.Command("docker", "create", "--network", "none", "--label", ownerLabel+"="+owner, img, "true").Output()
		if err != nil {
			t.Fatal(err)
		}
		id := strings.TrimSpace(string(out))
		t.Cleanup(func() { exec.Command("docker", "rm", "-f", id).Run() })
		return id
	}
	dead, live := create("999999999-1"), create(ownerTag())
	removed := CleanLeftovers()
	exists := func(id string) bool { return exec.Command("docker", "inspect", id).Run() == nil }
	if exists(dead) {
		t.Errorf("the container of a dead run is still there (removed %v)", removed)
	}
	if !exists(live) {
		t.Error("the container of a live run was removed")
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
