package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layer is one of docs/design.md's layers of domain packages: the folders it holds.
type layer struct {
	name string
	// folders are the layer's folders: a package is in the layer when its path is one of them or
	// lies under one.
	folders []string
	// below are the layers under this one its packages may import.
	below []string
	// within are the packages of the layer that import others of their own layer, each with
	// those it may import; a package not named here imports none of its own layer.
	within map[string][]string
}

// layers are docs/design.md's dependency rule, lowest first: the vocabularies, what --model
// names, the episode, the writer, the readers (the commands, on top, import everything).
// internal/ and the standard library aside, a package imports only packages of the layers its
// layer lists and, within its own layer, only those its entry names.
var layers = []layer{
	{name: "the vocabularies", folders: []string{"data", "snapshot", "grader", "harness/vocab"}, within: map[string][]string{
		"data":                    {"data/hub", "harness/vocab/shellspec"},
		"snapshot/synth":          {"data", "snapshot"},
		"snapshot/synth/naive":    {"snapshot"},
		"snapshot/validate":       {"data", "grader", "snapshot", "snapshot/synth/naive"},
		"snapshot/pack":           {"data"},
		"grader/judge":            {"grader"},
		"harness/vocab/atif":      {"grader"},
		"harness/vocab/promptset": {"grader", "harness/vocab/model", "harness/vocab/shellspec"},
		"harness/vocab/settings":  {"harness/vocab/model", "harness/vocab/promptset"},
		"harness/vocab/runfolder": {"grader", "harness/vocab/model", "harness/vocab/promptset", "harness/vocab/ratelimit",
			"harness/vocab/settings"},
	}},
	{name: "the models", folders: []string{"harness/models"}, below: []string{"the vocabularies"}, within: map[string][]string{
		"harness/models": {"harness/models/baseline", "harness/models/provider", "harness/models/replay"},
	}},
	{name: "the episode", folders: []string{"harness/episode"}, below: []string{"the vocabularies", "the models"}, within: map[string][]string{
		"harness/episode/sandbox/image":     {"harness/episode/sandbox/image/registry"},
		"harness/episode/sandbox/dockerapi": {"harness/episode/sandbox/image/registry"},
		// The sandbox's two sides, the guest inside and the host (sandbox), never import each
		// other; both import wire, what crosses between them, and kernel (neither imports any).
		"harness/episode/sandbox/guest": {"harness/episode/sandbox/kernel", "harness/episode/sandbox/wire"},
		"harness/episode/sandbox": {"harness/episode/sandbox/dockerapi", "harness/episode/sandbox/image",
			"harness/episode/sandbox/image/registry", "harness/episode/sandbox/kernel", "harness/episode/sandbox/wire"},
		"harness/episode/loop":     {"harness/episode/sandbox"},
		"harness/episode/agents":   {"harness/episode/gateway"},
		"harness/episode/agentrun": {"harness/episode/loop", "harness/episode/agents", "harness/episode/gateway", "harness/episode/sandbox"},
	}},
	{name: "the writer", folders: []string{"harness/runner"}, below: []string{"the vocabularies", "the models", "the episode"}},
	{name: "the readers", folders: []string{"harness/readers"}, below: []string{"the vocabularies"}, within: map[string][]string{
		"harness/readers/report": {"harness/readers/analysis"},
		"harness/readers/viewer": {"harness/readers/report"},
	}},
}

// layerOf is the index in layers of the layer whose folders hold pkg, or -1.
func layerOf(pkg string) int {
	for i, l := range layers {
		for _, f := range l.folders {
			if pkg == f || strings.HasPrefix(pkg, f+"/") {
				return i
			}
		}
	}
	return -1
}

// TestDependencyRule: the production helpers of internal/ import no domain package; every
// domain package is in a layer's folders, every package the table names exists and imports
// each package its entry allows (so the table and docs/design.md cannot drift), and none imports a domain
// package the layers do not allow it (the providers know nothing of episodes, the readers
// nothing of the runner or the sandbox, ...), on every platform's build of the package as
// this one builds it.
func TestDependencyRule(t *testing.T) {
	const module = "github.com/aa-grade/aa-grade/"
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, moduleRoot+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string]bool{}
	used := map[[2]string]bool{} // the within-layer arrows go list shows
	for line := range strings.Lines(string(out)) {
		fields := strings.Fields(line)
		pkg, ok := strings.CutPrefix(fields[0], module)
		found[pkg] = ok
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
		i := layerOf(pkg)
		if i < 0 {
			t.Errorf("%s is in no folder of docs/design.md's layers: place it in one", pkg)
			continue
		}
		l := layers[i]
		for _, imp := range fields[1:] {
			dep, ok := strings.CutPrefix(imp, module)
			if !ok || strings.HasPrefix(dep, "internal/") {
				continue
			}
			j := layerOf(dep)
			switch {
			case j >= 0 && j != i && slices.Contains(l.below, layers[j].name):
			case j == i && slices.Contains(l.within[pkg], dep):
				used[[2]string{pkg, dep}] = true
			default:
				t.Errorf("%s (%s) imports %s, which docs/design.md's layers do not allow", pkg, l.name, dep)
			}
		}
	}
	for _, l := range layers {
		for pkg, deps := range l.within {
			if !found[pkg] {
				t.Errorf("the layer of %s names %s, which go list does not find: take it out", l.name, pkg)
			}
			for _, dep := range deps {
				if !used[[2]string{pkg, dep}] {
					t.Errorf("the layer of %s lets %s import %s, which it does not: take the arrow out here and in docs/design.md", l.name, pkg, dep)
				}
			}
		}
	}
}
