package validate

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/snapshot/synth"
)

// retimed copies the task folder src to dst, every date in its files and names moved to
// another day: the same incident, recorded again later.
func retimed(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, strings.ReplaceAll(rel, "2025-12-15", "2026-02-03"))
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, []byte(strings.ReplaceAll(string(b), "2025-12-15", "2026-02-03")), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func fingerprint(t *testing.T, task, dir string) *Fingerprint {
	t.Helper()
	fp, err := FingerprintTask(task, dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Features) == 0 {
		t.Fatalf("%s: no feature", task)
	}
	return fp
}

// TestPlantedDuplicateIsFoundAndNearMissIsNot: a generated task copied under another id and
// moved in time is found as a duplicate of its original; a task with the same fault on
// another service is not, nor is any demo task.
func TestPlantedDuplicateIsFoundAndNearMissIsNot(t *testing.T) {
	dir := t.TempDir()
	orig, err := synth.Generate(filepath.Join(dir, "Scenario-1000"), synth.Options{Fault: "oom", Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	retimed(t, orig.Dir, filepath.Join(dir, "Scenario-2000"))
	var miss *synth.Result
	for seed := uint64(12); ; seed++ {
		miss, err = synth.Generate(filepath.Join(dir, "near", "Scenario-3000"), synth.Options{Fault: "oom", Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(miss.Victims, orig.Victims) {
			break
		}
		os.RemoveAll(filepath.Join(dir, "near"))
	}
	given := []*Fingerprint{fingerprint(t, "Scenario-1000", orig.Dir), fingerprint(t, "Scenario-2000", filepath.Join(dir, "Scenario-2000")),
		fingerprint(t, "Scenario-3000", miss.Dir)}
	demo, err := data.Open(context.Background(), "demo", data.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var against []*Fingerprint
	for _, task := range demo.Tasks {
		against = append(against, fingerprint(t, "demo:"+task.ID, task.Dir))
	}
	got := Similarities(given, against)
	if len(got) != 3*12+3 {
		t.Fatalf("%d pairs, want every given pair and each given task with each demo task", len(got))
	}
	if p := got[0]; p.Task != "Scenario-1000" || p.Of != "Scenario-2000" {
		t.Fatalf("the most alike pair is %s and %s, want the planted duplicate Scenario-1000 of Scenario-2000", p.Task, p.Of)
	}
	if s := got[0].Similarity; s < 0.99 {
		t.Errorf("the planted duplicate's similarity is %v, want 0.99 or more", s)
	}
	if n := len(got[0].Shared); n != sharedListed {
		t.Errorf("the planted duplicate lists %d shared pieces, want %d", n, sharedListed)
	}

	if got[1].Similarity >= DuplicateThreshold {
		t.Fatalf("a near miss is a duplicate: %+v", got[1])
	}
	if !strings.Contains(strings.Join(got[0].Shared, "\n"), orig.Victims[0]) {
		t.Errorf("what they share does not name the victim %s: %v", orig.Victims[0], got[0].Shared)
	}
}

// BenchmarkFingerprintLargeTask reads a large generated task (hundreds of MB of TSV) once,
// as tasks validate --against does for every task; MB/s is over the task's bytes.
func BenchmarkFingerprintLargeTask(b *testing.B) {
	dir := filepath.Join(b.TempDir(), "Scenario-1000")
	if _, err := synth.Generate(dir, synth.Options{Fault: "oom", Seed: 11, Large: true}); err != nil {
		b.Fatal(err)
	}
	var size int64
	filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if info, err := d.Info(); err == nil {
				size += info.Size()
			}
		}
		return nil
	})
	b.SetBytes(size)
	b.ResetTimer()
	for b.Loop() {
		if _, err := FingerprintTask("Scenario-1000", dir); err != nil {
			b.Fatal(err)
		}
	}
}
