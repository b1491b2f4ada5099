package grader

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

func problemsText(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Level + " " + p.Task + ": " + p.Message + "\n")
	}
	return b.String()
}

func TestFindSubmissionsLayouts(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "1.json"), "[]")
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "2", "agent_output.json"), "[]")
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "3", "trajectory.jsonl"), "") // no submission
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "notes.txt"), "")
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "0.json"), "[]")
	testfs.Write(t, filepath.Join(dir, "Scenario-2", "1.json"), "[]")
	testfs.Write(t, filepath.Join(dir, "Scenario-2", "1", "agent_output.json"), "[]")
	testfs.Write(t, filepath.Join(dir, "README.md"), "")

	files, problems, err := FindSubmissions(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files["Scenario-1"]) != 2 || files["Scenario-1"][2] != filepath.Join(dir, "Scenario-1", "2", "agent_output.json") {
		t.Fatalf("Scenario-1 = %v", files["Scenario-1"])
	}
	if len(files["Scenario-2"]) != 1 {
		t.Fatalf("Scenario-2 = %v", files["Scenario-2"])
	}
	text := problemsText(problems)
	for _, want := range []string{"ignored Scenario-1/notes.txt", "ignored Scenario-1/0.json", "repeat 1 has two submissions", "ignored README.md: a file beside the task folders"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}
	if _, _, err := FindSubmissions(filepath.Join(dir, "absent")); err == nil {
		t.Fatal("a missing folder must be an error")
	}
}

func TestGradeSubmissions(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "1.json"), `{"contributing_factors":[{"name":"shop/ConfigMap/flagd-config"},{"name":"shop/ResourceQuota/mem-quota"}]}`)
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "2.json"), `not json at all`)
	testfs.Write(t, filepath.Join(dir, "Scenario-1", "4.json"), `[]`)
	testfs.Write(t, filepath.Join(dir, "it-bench-sre-public-scenario-3", "1.json"), `["shop/cm/flagd-config", "shop/quota/mem-quota", "shop/Service/cart"]`)
	testfs.Write(t, filepath.Join(dir, "Scenario-99", "1.json"), `[]`)
	files, _, err := FindSubmissions(dir)
	if err != nil {
		t.Fatal(err)
	}
	tasks := []Task{
		{ID: "Scenario-1", GroundTruth: []byte(shopGT)},
		{ID: "Scenario-2", GroundTruth: []byte("groups: []")},
		{ID: "Scenario-3", AltIDs: []string{"it-bench-sre-public-scenario-3"}, GroundTruth: []byte(shopGT)},
	}
	results, problems, err := GradeSubmissions(context.Background(), tasks, files, GradeOptions{Repeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	var graded []string
	for _, r := range results {
		graded = append(graded, r.Task)
	}
	if want := []string{"Scenario-1", "Scenario-3"}; !slices.Equal(graded, want) {
		t.Fatalf("results of %q, want %q: %+v", graded, want, results)
	}

	s1 := results[0].Episodes
	var statuses []string
	for _, e := range s1 {
		statuses = append(statuses, e.Status)
	}
	if want := []string{StatusOK, StatusInvalid, StatusMissing}; !slices.Equal(statuses, want) {
		t.Fatalf("Scenario-1's episodes of status %q, want %q: %+v", statuses, want, s1)
	}
	if s1[0].Score != 1 || s1[2].Score != 0 {
		t.Errorf("Scenario-1's episodes scored %v and %v, want 1 and 0 (missing)", s1[0].Score, s1[2].Score)
	}
	textcheck.Has(t, "the reason of Scenario-1 repeat 2", s1[1].Reason, "no JSON value")
	if s1[2].RootCauses != 2 {
		t.Errorf("the missing episode counts %d root causes, want 2", s1[2].RootCauses)
	}
	if t.Failed() {
		t.FailNow()
	}
	if got := results[1].Episodes[0]; got.Status != StatusOK || got.Score != 2.0/3 {
		t.Fatalf("Scenario-3 (by id_aa) = %+v", got)
	}
	text := problemsText(problems)
	for _, want := range []string{"error Scenario-2: ground truth of Scenario-2: invalid ground truth: no groups",
		"ignored repeat 4 of Scenario-1", "submissions for Scenario-99 ignored"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %q:\n%s", want, text)
		}
	}

	// Without a repeat count, the largest repeat submitted for a known task is used.
	results, _, _ = GradeSubmissions(context.Background(), tasks, files, GradeOptions{})
	if len(results[0].Episodes) != 4 || len(results[1].Episodes) != 4 {
		t.Fatalf("default repeats: %d and %d episodes, want 4", len(results[0].Episodes), len(results[1].Episodes))
	}
}

func TestGradeOversizedFileIsInvalid(t *testing.T) {
	dir := t.TempDir()
	testfs.Write(t, filepath.Join(dir, "T", "1.json"), `["`+strings.Repeat("x", MaxSubmissionBytes+10)+`"]`)
	files, _, err := FindSubmissions(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, _, _ := GradeSubmissions(context.Background(), []Task{{ID: "T", GroundTruth: []byte(shopGT)}}, files, GradeOptions{Repeats: 1})
	if e := results[0].Episodes[0]; e.Status != StatusInvalid || !strings.Contains(e.Reason, "larger than 4 MiB") {
		t.Fatalf("episode = %+v", e)
	}
}
