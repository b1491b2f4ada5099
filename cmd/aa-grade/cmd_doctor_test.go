package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

func TestDoctor(t *testing.T) {
	const secret = "sk-doctor-secret-value"
	r := aaGrade(t, []string{"ACME_API_KEY=" + secret}, "doctor", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("%v\n%s%s", err, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, secret) || !slices.Contains(rep.Keys, "ACME_API_KEY") {
		t.Fatalf("keys: %v (the value must never be printed)", rep.Keys)
	}
	if len(rep.Backends) < 2 {
		t.Errorf("%d backends, want 2 or more", len(rep.Backends))
	}
	if rep.Cache.Dir == "" {
		t.Error("no Hugging Face cache folder")
	}
	if rep.Cache.FreeBytes == 0 {
		t.Errorf("no free space in the cache folder %s", rep.Cache.Dir)
	}
	if t.Failed() {
		t.Fatalf("report = %+v", rep)
	}
	isolating := rep.Selected != ""
	if isolating != (r.code == 0) {
		t.Fatalf("selected %q but exit %d", rep.Selected, r.code)
	}
	if os.Getenv("CI") != "" {
		if rep.Selected != "bwrap" {
			t.Errorf("under CI --sandbox auto uses %q, want bwrap", rep.Selected)
		}
		if rep.Tools == nil || !rep.Tools.Commands["jq"] {
			t.Errorf("under CI jq must be in the sandbox: %+v", rep.Tools)
		}
		if t.Failed() {
			t.FailNow()
		}
	}
	for _, b := range rep.Backends {
		names, holds := map[string]bool{}, map[string]bool{}
		for _, g := range b.Guarantees {
			names[g.Name], holds[g.Name] = true, g.Holds
			if g.Detail == "" {
				t.Errorf("%s: guarantee %s says nothing of how it holds or why not", b.Name, g.Name)
			}
		}
		// A detail never leans on a limit the same report says does not hold here.
		for _, g := range b.Guarantees {
			if names["memory_limit"] && !holds["memory_limit"] && strings.Contains(g.Detail, "--memory-limit") {
				t.Errorf("%s: %s speaks of --memory-limit, which does not hold here: %s", b.Name, g.Name, g.Detail)
			}
		}
		for _, g := range []string{"no_capabilities", "memory_limit", "processes_end", "inode_limit"} {
			if b.OK && !names[g] {
				t.Errorf("%s: no guarantee %s among %v", b.Name, g, names)
			}
		}

	}
	text := aaGrade(t, nil, "doctor")
	if !textcheck.Has(t, "the text output", text.stdout, "Sandbox backends:", "--sandbox auto uses:", "no_network") {
		t.FailNow()
	}
}
