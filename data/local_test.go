package data

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/klauspost/compress/zstd"
)

func indexLine(t *testing.T, scenario, gt string) string {
	t.Helper()
	b, err := json.Marshal(IndexRow{IDAA: "it-bench-sre-public-" + strings.ToLower(scenario), ScenarioID: scenario,
		Category: "sre", SourceSplit: "public", ScenarioRoot: "/home/user", GroundTruthYAML: gt})
	if err != nil {
		t.Fatal(err)
	}
	return string(b) + "\n"
}

func ids(tasks []Task) string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.ID)
	}
	return strings.Join(out, ",")
}

func TestOpenHubLayout(t *testing.T) {
	root := t.TempDir()
	sre := filepath.Join(root, "sre")
	testfs.Write(t, filepath.Join(sre, "data.jsonl"),
		indexLine(t, "Scenario-10", "groups: row10")+
			"not json\n\n"+
			indexLine(t, "Scenario-2", "groups: row2")+
			indexLine(t, "Scenario-2", "groups: again")+
			indexLine(t, "../escape", "x")+
			indexLine(t, "Scenario-3", "groups: row3")+
			indexLine(t, "Scenario-4", ""))
	testfs.Write(t, filepath.Join(sre, "Scenario-2", GroundTruthFile), "groups: folder2")
	testfs.Write(t, filepath.Join(sre, "Scenario-10", GroundTruthFile), "groups: row10\n")
	testfs.Write(t, filepath.Join(sre, "Scenario-4", GroundTruthFile), "groups: folder4")
	testfs.Write(t, filepath.Join(sre, "Scenario-7", GroundTruthFile), "groups: unlisted")

	for _, path := range []string{root, sre} {
		ds, err := Open(context.Background(), path, OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := ids(ds.Tasks); got != "Scenario-2,Scenario-3,Scenario-4,Scenario-10" {
			t.Fatalf("tasks = %s", got)
		}
		byID := map[string]Task{}
		for _, task := range ds.Tasks {
			byID[task.ID] = task
		}
		if string(byID["Scenario-2"].GroundTruth) != "groups: row2" || byID["Scenario-2"].Row.IDAA != "it-bench-sre-public-scenario-2" {
			t.Errorf("the row must win: %+v", byID["Scenario-2"])
		}
		if string(byID["Scenario-4"].GroundTruth) != "groups: folder4" {
			t.Errorf("an empty row ground truth falls back to the folder's: %q", byID["Scenario-4"].GroundTruth)
		}
		if byID["Scenario-3"].Dir != "" || byID["Scenario-10"].Dir != filepath.Join(sre, "Scenario-10") {
			t.Errorf("dirs: %q %q", byID["Scenario-3"].Dir, byID["Scenario-10"].Dir)
		}
		warnings := strings.Join(ds.Warnings, "\n")
		for _, want := range []string{"line 2: not a JSON object", "line 5: Scenario-2 listed twice",
			`line 6: scenario_id "../escape" is not a folder name`,
			"Scenario-2: ground_truth.yaml differs", "Scenario-3: listed in data.jsonl but has no folder",
			"Scenario-7: folder has no row in data.jsonl; ignored"} {
			if !strings.Contains(warnings, want) {
				t.Errorf("warnings lack %q:\n%s", want, warnings)
			}
		}
		if strings.Contains(warnings, "Scenario-10: ground_truth.yaml differs") {
			t.Errorf("whitespace differences are not differences:\n%s", warnings)
		}
	}
}

func TestOpenTaskFolders(t *testing.T) {
	root := t.TempDir()
	testfs.Write(t, filepath.Join(root, "Scenario-11", GroundTruthFile), "groups: a")
	testfs.Write(t, filepath.Join(root, "Scenario-9", GroundTruthFile), "groups: b")
	testfs.Write(t, filepath.Join(root, "notes", "README"), "")
	ds, err := Open(context.Background(), root, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(ds.Tasks); got != "Scenario-9,Scenario-11" {
		t.Fatalf("tasks = %s", got)
	}
	one, err := Open(context.Background(), filepath.Join(root, "Scenario-9"), OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(one.Tasks); got != "Scenario-9" || string(one.Tasks[0].GroundTruth) != "groups: b" {
		t.Fatalf("one task folder: %s %q", got, one.Tasks[0].GroundTruth)
	}
	// A Hub layout without an index is read as task folders under sre/.
	hub := t.TempDir()
	testfs.Write(t, filepath.Join(hub, "sre", "Scenario-1", GroundTruthFile), "groups: c")
	ds, err = Open(context.Background(), hub, OpenOptions{})
	if err != nil || ids(ds.Tasks) != "Scenario-1" {
		t.Fatalf("sre/ without index: %v %v", ds, err)
	}
}

func TestOpenErrors(t *testing.T) {
	empty := t.TempDir()
	file := filepath.Join(empty, "file.txt")
	testfs.Write(t, file, "x")
	for spec, want := range map[string]error{
		filepath.Join(empty, "absent"): ErrNotDataset,
		file:                           ErrNotDataset,
		empty:                          ErrNotDataset,
		"":                             ErrNotDataset,
		"hf:no-slash":                  ErrNotDataset,
		"hf:a/b@":                      ErrNotDataset,
	} {
		if _, err := Open(context.Background(), spec, OpenOptions{}); !errors.Is(err, want) {
			t.Errorf("Open(%q) = %v, want %v", spec, err, want)
		}
	}
}

func TestNaturalCompare(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"Scenario-2", "Scenario-10", -1}, {"Scenario-10", "Scenario-2", 1}, {"Scenario-2", "Scenario-2", 0},
		{"Scenario-02", "Scenario-2", -1}, {"a", "b", -1}, {"Scenario-", "Scenario-1", -1}, {"x9", "x10y", -1},
	} {
		if got := NaturalCompare(c.a, c.b); got != c.want {
			t.Errorf("NaturalCompare(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}

func TestOpenKeepsWantedTasks(t *testing.T) {
	root := t.TempDir()
	for _, id := range []string{"Scenario-1", "Scenario-2", "Scenario-10"} {
		testfs.Write(t, filepath.Join(root, id, GroundTruthFile), "groups: x")
	}
	ds, err := Open(context.Background(), root, OpenOptions{Tasks: []string{"10", "scenario-1", "Scenario-1"}})
	if err != nil || ids(ds.Tasks) != "Scenario-1,Scenario-10" {
		t.Fatalf("tasks = %v, %v", ds, err)
	}
	if _, err := Open(context.Background(), root, OpenOptions{Tasks: []string{"Scenario-3"}}); !errors.Is(err, ErrUnknownTask) || !strings.Contains(err.Error(), root+": no such task: Scenario-3 (its tasks: 1-2, 10)") {
		t.Fatalf("unknown task: %v", err)
	}
}

// TestOpenDemo unpacks the embedded demo dataset into the user cache folder once and reads
// it as a dataset in the Hub layout.
func TestOpenDemo(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ds, err := Open(context.Background(), DemoSpec, OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ds.Spec != DemoSpec {
		t.Errorf("spec %s, want %s", ds.Spec, DemoSpec)
	}
	if len(ds.Tasks) != 12 {
		t.Fatalf("%d tasks, want 12", len(ds.Tasks))
	}
	if len(ds.Warnings) != 0 {
		t.Errorf("warnings %q, want none", ds.Warnings)
	}
	if ds.Tasks[0].Dir == "" {
		t.Errorf("the first task has no folder")
	}
	if ds.Tasks[0].Row == nil {
		t.Errorf("the first task has no row of the index")
	}
	if t.Failed() {
		t.Fatalf("demo = %+v", ds)
	}
	again, err := Open(context.Background(), DemoSpec, OpenOptions{Tasks: []string{ds.Tasks[2].ID}})
	if err != nil {
		t.Fatalf("second open: %v", err)
	}
	if len(again.Tasks) != 1 {
		t.Fatalf("second open: %d tasks, want 1", len(again.Tasks))
	}
	if again.Tasks[0].Dir != ds.Tasks[2].Dir {
		t.Fatalf("second open: the task is in %s, want %s", again.Tasks[0].Dir, ds.Tasks[2].Dir)
	}

}

func TestUnpackRefusesEscapingPaths(t *testing.T) {
	var buf bytes.Buffer
	zw, _ := zstd.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	tw.WriteHeader(&tar.Header{Name: "../evil", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644})
	tw.Write([]byte("x"))
	tw.Close()
	zw.Close()
	dir := t.TempDir()
	if err := UnpackTarZst(&buf, filepath.Join(dir, "in")); err == nil || !strings.Contains(err.Error(), "leaves the folder") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "evil")); err == nil {
		t.Fatal("a file was written outside the folder")
	}
}

// TestOpenMissingFolder: a dataset folder that does not exist is not a dataset, said in
// words with the forms a dataset takes, not as the system call's error.
func TestOpenMissingFolder(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "ITBench-AA")
	_, err := Open(context.Background(), missing, OpenOptions{})
	if !errors.Is(err, ErrNotDataset) {
		t.Fatalf("%v, want ErrNotDataset", err)
	}
	if want := "dataset " + missing + ": not a dataset: no such folder (a dataset is hf:OWNER/NAME, demo or a folder)"; err.Error() != want {
		t.Errorf("%q, want %q", err, want)
	}
}
