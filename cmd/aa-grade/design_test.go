package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layer is one of docs/design.md's layers of domain packages.
type layer struct {
	name string
	// below are the layers under this one its packages may import.
	below []string
	// packages are the layer's packages, each with those of its own layer it may import.
	packages map[string][]string
}

// layers are docs/design.md's dependency rule, lowest first: the vocabularies, the episode,
// the writer, the readers (the commands, on top, import everything). internal/ and the
// standard library aside, a package imports only packages of the layers its layer lists and,
// within its own layer, only those its entry names.
var layers = []layer{
	{name: "vocabularies", packages: map[string][]string{
		"data/hub":             nil,
		"data":                 {"data/hub"},
		"snapshot":             nil,
		"snapshot/synth":       {"data", "snapshot"},
		"snapshot/synth/naive": {"snapshot"},
		"snapshot/validate":    {"data", "grader", "snapshot", "snapshot/synth/naive"},
		"snapshot/pack":        {"data"},
		"grader":               nil,
		"grader/judge":         {"grader"},
		"grader/leaderboard":   nil,
		"harness/ratelimit":    nil,
		"harness/model":        {"harness/ratelimit"},
		"harness/runfolder":    {"grader", "harness/model", "harness/ratelimit"},
		"harness/atif":         {"grader"},
		"harness/shellspec":    nil,
		"harness/promptset":    {"grader", "harness/model", "harness/runfolder", "harness/shellspec"},
	}},
	{name: "the episode", below: []string{"vocabularies"}, packages: map[string][]string{
		"harness/sandbox/image/registry": nil,
		"harness/sandbox/image":          {"harness/sandbox/image/registry"},
		"harness/sandbox/dockerapi":      {"harness/sandbox/image/registry"},
		"harness/sandbox":                {"harness/sandbox/dockerapi", "harness/sandbox/image", "harness/sandbox/image/registry"},
		"harness":                        {"harness/sandbox"},
		"harness/baseline":               {"harness"},
		"harness/gateway":                nil,
		"harness/agents":                 {"harness/gateway"},
		"harness/agentrun":               {"harness", "harness/agents", "harness/gateway", "harness/sandbox"},
	}},
	{name: "the writer", below: []string{"vocabularies", "the episode"}, packages: map[string][]string{
		"harness/runner": nil,
	}},
	{name: "the readers", below: []string{"vocabularies"}, packages: map[string][]string{
		"harness/analysis": nil,
		"harness/report":   {"harness/analysis"},
		"harness/viewer":   {"harness/report"},
		"harness/replay":   nil,
		"harness/export":   nil,
	}},
}

// TestDependencyRule: the production helpers of internal/ import no domain package; every
// domain package is in a layer, every package of a layer exists, and none imports a domain
// package the layers do not allow it (the providers know nothing of episodes, the readers
// nothing of the runner or the sandbox, ...), on every platform's build of the package as
// this one builds it.
func TestDependencyRule(t *testing.T) {
	const module = "github.com/aa-grade/aa-grade/"
	layerOf := map[string]int{}
	for i, l := range layers {
		for pkg := range l.packages {
			layerOf[pkg] = i
		}
	}
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, moduleRoot+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string]bool{}
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		if !ok || strings.HasPrefix(pkg, "cmd/") || strings.HasPrefix(pkg, "internal/testsupport/") || strings.HasPrefix(pkg, "internal/devtools/") {
			continue
		}
		if strings.HasPrefix(pkg, "internal/") { // a production helper, beside the layers
			for _, imp := range fields[1:] {
				if dep, ok := strings.CutPrefix(imp, module); ok && !strings.HasPrefix(dep, "internal/") {
					t.Errorf("%s imports %s: a helper of internal/ imports no domain package", pkg, dep)
				}
			}
			continue
		}
		found[pkg] = true
		i, ok := layerOf[pkg]
		if !ok {
			t.Errorf("%s is in none of docs/design.md's layers: place it in one", pkg)
			continue
		}
		l := layers[i]
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || strings.HasPrefix(dep, "internal/") {
				continue
			}
			j, known := layerOf[dep]
			switch {
			case known && j != i && slices.Contains(l.below, layers[j].name):
			case known && j == i && slices.Contains(l.packages[pkg], dep):
			default:
				t.Errorf("%s (%s) imports %s, which docs/design.md's layers do not allow", pkg, l.name, dep)
			}
		}
	}
	for pkg := range layerOf {
		if !found[pkg] {
			t.Errorf("%s is in a layer but go list finds no such package: take it out", pkg)
		}
	}
}
