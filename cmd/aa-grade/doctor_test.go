package main

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
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
	if len(rep.Backends) < 2 || rep.Cache.Dir == "" || rep.Cache.FreeBytes == 0 {
		t.Fatalf("report = %+v", rep)
	}
	isolating := rep.Selected != ""
	if isolating != (r.code == 0) {
		t.Fatalf("selected %q but exit %d", rep.Selected, r.code)
	}
	if os.Getenv("CI") != "" && (rep.Selected != "bwrap" || rep.Tools == nil || !rep.Tools.Commands["jq"]) {
		t.Fatalf("under CI bwrap and jq must work: %+v", rep)
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
		if b.OK && (!names["no_capabilities"] || !names["memory_limit"] || !names["processes_end"] || !names["inode_limit"]) {
			t.Errorf("%s: guarantees %v", b.Name, names)
		}
	}
	text := aaGrade(t, nil, "doctor")
	if !strings.Contains(text.stdout, "Sandbox backends:") || !strings.Contains(text.stdout, "--sandbox auto uses:") ||
		!strings.Contains(text.stdout, "no_network") {
		t.Fatalf("text output:\n%s", text.stdout)
	}
}
