package runner

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testfs"
)

// TestReadResultsAndCollect: the last line of an episode wins, a line cut by a crash and
// fields of newer versions are ignored, and episodes never recorded count as unfinished.
func TestReadResultsAndCollect(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "results.jsonl"), strings.Join([]string{
		`{"task":"Scenario-1","repeat":1,"status":"error","error":"provider down"}`,
		`{"task":"Scenario-1","repeat":1,"status":"ok","score":0.5,"tp":1,"fp":1,"root_causes":1,"root_causes_found":1,"matcher":"judge"}`,
		`{"task":"Scenario-2","repeat":1,"status":"max_turns","turns":100}`,
		`{"task":"Scenario-2","repeat":2,"status":"ok","sco`,
	}, "\n"))
	done, err := ReadResults(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(done) != 2 || done[Episode{"Scenario-1", 1}.Key()].Score != 0.5 || done[Episode{"Scenario-2", 1}.Key()].Turns != 100 {
		t.Fatalf("read %+v", done)
	}
	all, summary := Collect(Shard{}.Episodes([]string{"Scenario-1", "Scenario-2"}, 2), done, "")
	if len(all) != 4 || summary.Episodes != 4 || summary.Score != 0.125 {
		t.Fatalf("collected %d episodes, summary %+v", len(all), summary)
	}
	for _, i := range []int{1, 3} {
		if all[i].Status != grader.StatusUnfinished || !strings.Contains(all[i].Error, "not run") {
			t.Errorf("episode %s/%d never recorded: %+v", all[i].Task, all[i].Repeat, all[i])
		}
	}

	if none, err := ReadResults(t.TempDir()); err != nil || len(none) != 0 {
		t.Fatalf("a folder without results.jsonl: %v, %v", none, err)
	}
}

func TestReadHeader(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadHeader(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no run.json: %v", err)
	}
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": "builtin/baseline", "repeats": 2, "tasks": ["Scenario-1"], "prices": {"input": 3}}`)
	h, err := ReadHeader(dir)
	if err != nil || h.Model != "builtin/baseline" || h.Repeats != 2 || len(h.Tasks) != 1 {
		t.Fatalf("%+v, %v", h, err)
	}
	testfs.Write(t, filepath.Join(dir, "run.json"), `{"model": `)
	if _, err := ReadHeader(dir); err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "run.json")) {
		t.Fatalf("a cut run.json: %v", err)
	}
}
