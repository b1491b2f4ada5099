//go:build !linux

package sandbox

// cgroupParents: there are no cgroups here.
func cgroupParents() []string { return nil }
