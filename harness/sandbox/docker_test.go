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
	if img == "" {
		t.Skip("no AA_GRADE_TEST_IMAGE")
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
