// Package version says which aa-grade is running, as its build information gives it: the CLI
// prints it, run.json records it, and the reports name it, so a score can be traced back to the
// code that produced it. It is one small package so that readers of run folders need not import
// the runner to learn it.
package version

import (
	"runtime/debug"
	"strings"
)

// Version is the module version of a `go install ...@vX.Y.Z`, else "devel" with the VCS
// revision the binary was built from.
var Version = buildVersion()

// Revision is the VCS revision of this build ("" when unknown), with "+dirty" for a build from
// a modified tree.
var Revision = revision()

func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	if rev := revision(); rev != "" {
		commit, dirty, _ := strings.Cut(rev, "+") // dirty: "dirty" for a modified tree
		if dirty != "" {
			dirty = "+" + dirty
		}
		return "devel-" + commit[:min(12, len(commit))] + dirty
	}
	return "devel"
}

func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
