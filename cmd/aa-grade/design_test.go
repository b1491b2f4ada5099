package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// dependencyRule is docs/design.md's dependency rule: the domain packages each package may
// import (internal/ and the standard library aside). A package not listed may import none.
var dependencyRule = map[string][]string{
	"data":                  {"data/hub"},
	"grader/judge":          {"grader"},
	"snapshot/pack":         {"data"},
	"snapshot/synth":        {"snapshot"},
	"snapshot/synth/naive":  {"snapshot"},
	"snapshot/validate":     {"data", "grader", "snapshot", "snapshot/synth/naive"},
	"harness":               {"grader", "harness/model", "harness/sandbox"},
	"harness/baseline":      {"harness", "harness/model"},
	"harness/runfolder":     {"grader", "harness/model"},
	"harness/replay":        {"harness", "harness/model", "harness/runfolder"},
	"harness/runner":        {"data", "grader", "harness", "harness/model", "harness/runfolder", "harness/sandbox"},
	"harness/analysis":      {"grader", "harness", "harness/runfolder", "snapshot"},
	"harness/report":        {"grader", "grader/leaderboard", "harness/analysis", "harness/model", "harness/runfolder", "harness/runner"},
	"harness/viewer":        {"grader", "harness", "harness/model", "harness/report", "harness/runfolder"},
	"harness/sandbox":       {"harness/sandbox/image", "harness/sandbox/image/registry"},
	"harness/sandbox/image": {"harness/sandbox/image/registry"},
}

// TestDependencyRule: no package imports a domain package the rule does not allow it (the
// providers know nothing of episodes, the grader nothing of runs, ...), on every platform's
// build of the package as this one builds it.
func TestDependencyRule(t *testing.T) {
	const module = "github.com/aa-grade/aa-grade/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, moduleRoot+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	checked := 0
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || strings.HasPrefix(pkg, "internal/") || strings.HasPrefix(pkg, "cmd/") {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || strings.HasPrefix(dep, "internal/") {
				continue
			}
			if !slices.Contains(dependencyRule[pkg], dep) {
				t.Errorf("%s imports %s, which docs/design.md's dependency rule does not allow", pkg, dep)
			}
		}
	}
	if checked < 15 {
		t.Fatalf("only %d domain packages found:\n%s", checked, out)
	}
}
