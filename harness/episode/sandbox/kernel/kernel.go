// Package kernel holds what both sides of a sandbox do the same way: aa-grade on the host
// (package sandbox) and the guest inside (package guest), which may import each other no
// more than they may import the host's backends. Each asks the Linux kernel the same
// questions (which Landlock ABI it has, which seccomp architecture this build is), enters
// cgroups and closes inherited descriptors the same way, and places a path under a folder by
// the same test: the host to decide what it may ask of the guest, the guest to do it.
package kernel

import "strings"

// Within says whether path is dir or lies under it, both clean and absolute.
func Within(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, strings.TrimSuffix(dir, "/")+"/")
}
