//go:build linux

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// otherSet is a prompt set in other words than the built-in one (its truncation notice and
// shell results included), in aa-grade's own words.
const otherSet = "cmd/aa-grade/testdata/other.prompts"

// TestARunKeepsItsPromptSet: a run with another set keeps it in its folder, so the analysis
// reads its shell results in its words (it words a truncation otherwise than the built-in
// set) and a replay sends them again with no flag; without the
// file, the replay asks for the set and the analysis says what it could not read.
func TestARunKeepsItsPromptSet(t *testing.T) {
	// Every investigation command fails and prints more than the output limit.
	s := newScriptedRun(t, fakemodel.Script{Turns: 4, Command: "seq 1 20000; false", Answer: answer901}, "901", "1")
	run := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, s.env, s.command(run, "--prompts", otherSet)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	_, other := promptsSHA(t, "--prompts", otherSet)
	if _, kept := promptsSHA(t, "--prompts", filepath.Join(run, runfolder.PromptsFile)); kept != other {
		t.Fatalf("the kept set hashes %s, the other set %s", kept, other)
	}

	r := aaGrade(t, nil, "analyze", "--json", run)
	var out []struct {
		Episodes []struct {
			Commands  map[string]int `json:"commands"`
			Failed    int            `json:"failed_commands"`
			Truncated int            `json:"truncated_outputs"`
		} `json:"episodes"`
		Warnings []string `json:"warnings"`
	}
	r.wantExit(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("analyze: %v\n%s", err, r.stdout)
	}
	if len(out) != 1 || len(out[0].Episodes) != 1 {
		t.Fatalf("analyze: want one run of one episode:\n%s", r.stdout)
	}
	ep := out[0].Episodes[0]
	if ep.Failed != 2 {
		t.Errorf("%d commands failed, want 2 (the two investigation turns)", ep.Failed)
	}
	if ep.Truncated != 2 {
		t.Errorf("%d outputs truncated, want 2 (the two investigation turns)", ep.Truncated)
	}
	if len(out[0].Warnings) != 0 {
		t.Errorf("warnings %q, want none", out[0].Warnings)
	}

	replayed := filepath.Join(t.TempDir(), "replayed")
	r = aaGrade(t, s.env, "run", "--model", "replay/"+run, "--out", replayed)
	if r.code != 0 || !strings.Contains(r.stderr, "every episode followed its recording") {
		t.Fatalf("replay with the kept set: exit %d\n%s", r.code, r.stderr)
	}

	if err := os.Remove(filepath.Join(run, runfolder.PromptsFile)); err != nil {
		t.Fatal(err)
	}
	r = aaGrade(t, s.env, "run", "--model", "replay/"+run, "--out", filepath.Join(t.TempDir(), "again"))
	if r.code != 2 {
		t.Errorf("replay without the kept set: exit %d, want 2", r.code)
	}
	textcheck.Has(t, "the refusal of a replay without the kept set", r.stderr, "does not keep the prompt set", "--prompts FILE")

	r = aaGrade(t, s.env, "run", "--model", "replay/"+run, "--prompts", otherSet, "--out", filepath.Join(t.TempDir(), "given"))
	if r.code != 0 || !strings.Contains(r.stderr, "every episode followed its recording") {
		t.Errorf("replay with the set given: exit %d\n%s", r.code, r.stderr)
	}
	r = aaGrade(t, nil, "analyze", run)
	if r.code != 0 || !strings.Contains(r.stderr, "does not keep the prompt set") {
		t.Errorf("analyze without the kept set: exit %d\n%s", r.code, r.stderr)
	}
}
