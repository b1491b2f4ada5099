package runner

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/grader/judge"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// shardWithJudge writes the run folder of shard i of 2 (Scenario-1, 2 repeats), its one
// episode finished, with the judge answers given (file name -> body) in its judge/.
func shardWithJudge(t *testing.T, i int, answers map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "shard")
	f, err := runfolder.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := runfolder.Header{Dataset: "demo", Tasks: []string{"Scenario-1"}, Repeats: 2, Model: "openai/m",
		Judge: "openai/j", Shard: string(rune('0'+i)) + "/2"}
	if err := f.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := f.Append(runfolder.Result{Task: "Scenario-1", Repeat: i, Status: "ok", Score: 1}); err != nil {
		t.Fatal(err)
	}
	judgeDir := filepath.Join(dir, runfolder.JudgeDir)
	os.MkdirAll(judgeDir, 0o755)
	for name, body := range answers {
		if err := os.WriteFile(filepath.Join(judgeDir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestMergeCarriesTheJudgeAnswers: the merged folder holds every shard's judge answers, so
// grade --judge scores it again without a call; shards that answered one question two ways
// are refused before anything is written.
func TestMergeCarriesTheJudgeAnswers(t *testing.T) {
	one := shardWithJudge(t, 1, map[string]string{"a.json": `{"model":"openai/j","reply":"{}"}`})
	two := shardWithJudge(t, 2, map[string]string{"b.json": `{"model":"openai/j","reply":"{\"x\": null}"}`,
		"a.json": `{"model":"openai/j","reply":"{}"}`})
	out := filepath.Join(t.TempDir(), "merged")
	rep, err := Merge(out, []string{one, two})
	if err != nil || len(rep.Missing) != 0 {
		t.Fatalf("merge: %v, missing %v", err, rep.Missing)
	}
	for _, name := range []string{"a.json", "b.json"} {
		if _, err := os.Stat(filepath.Join(out, runfolder.JudgeDir, name)); err != nil {
			t.Error(err)
		}
	}

	three := shardWithJudge(t, 2, map[string]string{"a.json": `{"model":"openai/j","reply":"{\"x\": \"g\"}"}`})
	out = filepath.Join(t.TempDir(), "conflict")
	if _, err := Merge(out, []string{one, three}); !errors.Is(err, judge.ErrConflict) {
		t.Fatalf("merge of disagreeing judges: %v", err)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused merge left %s behind (%v)", out, err)
	}
}

// TestMergeCarriesTheLedgers: the merged folder's ledger holds every call of every shard, and
// its spend is their sum; when a shard has no ledger (written before it was kept), the merged
// run's spend is not recorded rather than short.
func TestMergeCarriesTheLedgers(t *testing.T) {
	charge := func(dir string, usd ...float64) {
		f, err := runfolder.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, v := range usd {
			if err := f.Charge(runfolder.Charge{Task: "Scenario-1", Repeat: 1, CostUSD: &v}); err != nil {
				t.Fatal(err)
			}
		}
	}
	one, two := shardWithJudge(t, 1, nil), shardWithJudge(t, 2, nil)
	charge(one, 0.5, 0.25)
	charge(two, 1)
	out := filepath.Join(t.TempDir(), "merged")
	if _, err := Merge(out, []string{one, two}); err != nil {
		t.Fatal(err)
	}
	merged, err := runfolder.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	switch s := merged.Spend; {
	case s == nil:
		t.Fatal("the merged folder has no ledger")
	case s.Calls != 3:
		t.Errorf("%d calls in the merged ledger, want 3", s.Calls)
	case *s.Known() != 1.75:
		t.Errorf("the merged run spent $%v, want $1.75", *s.Known())
	}

	old := shardWithJudge(t, 2, nil)
	out = filepath.Join(t.TempDir(), "merged-old")
	if _, err := Merge(out, []string{one, old}); err != nil {
		t.Fatal(err)
	}
	merged, err = runfolder.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if merged.Spend != nil {
		t.Errorf("merged with a shard without a ledger: spend %+v, want none", merged.Spend)
	}
}
