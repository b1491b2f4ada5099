package synth

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot"
)

// treeHash hashes every file of a folder, for determinism checks.
func treeHash(t *testing.T, dir string) string {
	t.Helper()
	var lines []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(b)
		rel, _ := filepath.Rel(dir, p)
		lines = append(lines, rel+" "+hex.EncodeToString(sum[:]))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// TestEveryFaultIsReadableAndSolvable generates each fault, and a two-fault task, and checks
// that the snapshot reads without a broken record, that the ground truth parses, and that
// the root causes are objects of the snapshot that the grader maps to root-cause groups.
func TestEveryFaultIsReadableAndSolvable(t *testing.T) {
	for i, kind := range append(slices.Clone(Faults), "flag+netpol", "schedule+oom") {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "task")
			res, err := Generate(dir, Options{Fault: kind, Seed: uint64(100 + i)})
			if err != nil {
				t.Fatal(err)
			}
			snap, err := snapshot.Read(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Problems) > 0 {
				t.Fatalf("problems: %v", snap.Problems)
			}
			for path, st := range snap.Tables {
				if st.BadRows > 0 || st.Rows == 0 {
					t.Errorf("%s: %d rows, %d bad", path, st.Rows, st.BadRows)
				}
			}
			if len(snap.Alerts) < 25 {
				t.Errorf("%d alerts files", len(snap.Alerts))
			}
			doc, err := os.ReadFile(filepath.Join(dir, data.GroundTruthFile))
			if err != nil {
				t.Fatal(err)
			}
			gt, err := grader.ParseGroundTruth(doc)
			if err != nil {
				t.Fatalf("%v\n%s", err, doc)
			}
			if len(res.RootCauses) != strings.Count(kind, "+")+1 {
				t.Fatalf("root causes %v for %s", res.RootCauses, kind)
			}
			for _, rc := range res.RootCauses {
				if !slices.ContainsFunc(snap.Catalog.Entries(), func(e *snapshot.CatalogEntry) bool { return e.Entity == rc }) {
					t.Fatalf("root cause %s is not in the catalogue", rc)
				}
			}
			if s := gt.Score(res.RootCauses); s.Score != 1 {
				t.Fatalf("naming the root causes %v scores %+v\n%s", res.RootCauses, s, doc)
			}
			if len(res.RootCauses) == 2 {
				if s := gt.Score(res.RootCauses[:1]); s.Score != 0 {
					t.Errorf("naming one of two root causes scores %v", s.Score)
				}
			}
			edge := gt.Score([]string{"otel-demo/Service/frontend-proxy", "otel-demo/Deployment/frontend-proxy"})
			if edge.Score != 0 {
				t.Errorf("naming the edge proxy scores %v", edge.Score)
			}
		})
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, b, c := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b"), filepath.Join(t.TempDir(), "c")
	for _, dir := range []string{a, b} {
		if _, err := Generate(dir, Options{Fault: "oom", Seed: 7}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Generate(c, Options{Fault: "oom", Seed: 8}); err != nil {
		t.Fatal(err)
	}
	if treeHash(t, a) != treeHash(t, b) {
		t.Fatal("the same seed gave different tasks")
	}
	if treeHash(t, a) == treeHash(t, c) {
		t.Fatal("different seeds gave the same task")
	}
}

func TestGenerateRefusesBadInput(t *testing.T) {
	if _, err := Generate(t.TempDir()+"/x", Options{Fault: "meteor"}); err == nil || !strings.Contains(err.Error(), "unknown fault") {
		t.Fatalf("unknown fault: %v", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Generate(dir, Options{Fault: "oom"}); err == nil || !strings.Contains(err.Error(), "not empty") {
		t.Fatalf("non-empty folder: %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "keep.txt")); string(b) != "x" {
		t.Fatal("an existing file was touched")
	}
}
