package atif

import (
	"path/filepath"
	"slices"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestFindDocuments: a lone document, a folder of .json documents (by name, not its
// subfolders'), and Find's layouts before those; a path that is not there is an error.
func TestFindDocuments(t *testing.T) {
	dir := t.TempDir()
	one := filepath.Join(dir, "one.json")
	write(t, one, doc(t, [2]string{"done", ""}))
	flat := filepath.Join(dir, "flat")
	write(t, filepath.Join(flat, "b.json"), doc(t))
	write(t, filepath.Join(flat, "a.json"), doc(t))
	write(t, filepath.Join(flat, "notes.txt"), []byte("not a document"))
	write(t, filepath.Join(flat, "sub", "c.json"), doc(t))
	export := filepath.Join(dir, "export")
	write(t, filepath.Join(export, "Scenario-2", "1", File), doc(t))
	for _, c := range []struct {
		path, layout string
		want         []string // the episodes' tasks
	}{
		{one, LayoutFiles, []string{"one"}},
		{flat, LayoutFiles, []string{"a", "b"}},
		{export, LayoutEpisodes, []string{"Scenario-2"}},
	} {
		found, err := FindDocuments(c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if found.Layout != c.layout {
			t.Errorf("%s: layout %q, want %q", c.path, found.Layout, c.layout)
		}
		var tasks []string
		for _, e := range found.Episodes {
			tasks = append(tasks, e.Task)
		}
		if !slices.Equal(tasks, c.want) {
			t.Errorf("%s: tasks %q, want %q", c.path, tasks, c.want)
		}
	}
	if _, err := FindDocuments(filepath.Join(dir, "absent")); err == nil {
		t.Error("no error for a path that is not there")
	}
}

// TestTrialOutcome: a Harbor trial's rewards from result.json (a null reward left out), its
// exception, the verifier's reward.txt while result.json has none; a reward.txt that is no
// number is an error naming it; a document outside a trial has none.
func TestTrialOutcome(t *testing.T) {
	dir := t.TempDir()
	trial := func(name, result, reward string) string {
		path := filepath.Join(dir, name, "agent", File)
		write(t, path, doc(t))
		write(t, filepath.Join(dir, name, "result.json"), []byte(result))
		if reward != "" {
			write(t, filepath.Join(dir, name, "verifier", "reward.txt"), []byte(reward))
		}
		return path
	}
	verified := trial("verified", `{"verifier_result": {"rewards": {"reward": 0.5, "other": null}},
		"exception_info": {"exception_type": "AgentTimeoutError", "exception_message": "took too long"}}`, "")
	pending := trial("pending", `{"task_name": "t"}`, "1\n")
	broken := trial("broken", `{}`, "n/a")
	o, err := TrialOutcome(verified)
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Rewards) != 1 || o.Rewards["reward"] != 0.5 {
		t.Errorf("rewards %v, want reward 0.5 alone", o.Rewards)
	}
	if o.Exception != "AgentTimeoutError: took too long" {
		t.Errorf("exception %q", o.Exception)
	}
	untold := trial("untold", `{"verifier_result": {"rewards": {"reward": 0}},
		"exception_info": {"exception_type": "AgentTimeoutError", "exception_message": ""}}`, "")
	if o, _ := TrialOutcome(untold); o.Exception != "AgentTimeoutError" {
		t.Errorf("an exception without a message: %q, want its type alone", o.Exception)
	}
	if o, err := TrialOutcome(pending); err != nil || o.Rewards["reward"] != 1 {
		t.Errorf("reward.txt: %v, %v", o.Rewards, err)
	}
	_, err = TrialOutcome(broken)
	if err == nil {
		t.Fatal("no error for a reward.txt that is no number")
	}
	textcheck.Has(t, "the error", err.Error(), filepath.Join(dir, "broken", "verifier", "reward.txt"), "not a reward")
	lone := filepath.Join(dir, "lone.json")
	write(t, lone, doc(t))
	o, err = TrialOutcome(lone)
	if err != nil {
		t.Errorf("a document outside a trial: %v", err)
	}
	if o.Rewards != nil || o.Exception != "" {
		t.Errorf("a document outside a trial has an outcome: %+v", o)
	}
}
