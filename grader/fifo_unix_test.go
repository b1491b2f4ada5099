//go:build unix

package grader

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestGradeFIFOSubmissionIsInvalidWithoutBlocking: a FIFO in a submissions folder (another
// harness's agent made it) is an invalid episode, not a grader waiting forever for a writer.
func TestGradeFIFOSubmissionIsInvalidWithoutBlocking(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "T"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(dir, "T", "1.json"), 0o644); err != nil {
		t.Fatal(err)
	}
	files, _, err := FindSubmissions(dir)
	if err != nil {
		t.Fatal(err)
	}
	results, _, _ := GradeSubmissions(context.Background(), []Task{{ID: "T", GroundTruth: []byte(shopGT)}}, files, GradeOptions{Repeats: 1})
	if e := results[0].Episodes[0]; e.Status != StatusInvalid || !strings.Contains(e.Reason, "not a regular file") {
		t.Fatalf("episode = %+v", e)
	}
}
