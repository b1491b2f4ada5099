package sandbox

import "testing"

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
