package sandbox

import (
	"os"
	"strconv"
	"testing"
)

// TestLeftoversSayWhatWasRemoved: a run that died leaves scratch folders, cgroups and
// containers; the message counts each kind by its name, never containers as scratch folders.
func TestLeftoversSayWhatWasRemoved(t *testing.T) {
	scratch := Leftover{LeftoverScratch, "/tmp/aa-grade-1-2"}
	cgroup := Leftover{LeftoverCgroup, "/sys/fs/cgroup/pids/aa-grade-1-2-1"}
	container := Leftover{LeftoverContainer, "aa-grade-1-2-1"}
	for want, l := range map[string]Leftovers{
		"nothing":                           {},
		"1 scratch folder":                  {scratch},
		"4 containers":                      {container, container, container, container},
		"1 scratch folder and 4 containers": {container, scratch, container, container, container},
		"2 scratch folders, 1 cgroup and 1 container": {scratch, cgroup, container, scratch},
		"1 scratch folder and 2 cgroups":              {cgroup, scratch, cgroup},
	} {
		if got := l.String(); got != want {
			t.Errorf("%v: %q, want %q", l, got, want)
		}
	}
}

// TestOwnerDeadReadsTags: a tag of this process is alive, one of a pid that does not exist or
// started at another time is dead, whichever system's start time it carries (a letter and
// digits elsewhere than Linux), and what aa-grade did not name is left alone.
func TestOwnerDeadReadsTags(t *testing.T) {
	for name, dead := range map[string]bool{
		leftoverPrefix + ownerTag():                              false,
		leftoverPrefix + ownerTag() + "-task-3":                  false,
		leftoverPrefix + "999999999-1":                           true,
		leftoverPrefix + "999999999-w134404304372134350-guest-1": true,
		leftoverPrefix + strconv.Itoa(os.Getpid()) + "-1":        true, // this pid, another start
		leftoverPrefix + strconv.Itoa(os.Getpid()) + "-w1":       true,
		leftoverPrefix + "test-live-12":                          false,
		leftoverPrefix + "12-":                                   false,
		leftoverPrefix + "12-w":                                  false,
		leftoverPrefix + "12-W1":                                 false,
	} {
		if got := ownerDead(name); got != dead {
			t.Errorf("ownerDead(%q) = %v, want %v", name, got, dead)
		}
	}
}
