package runfolder

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
)

// TestReadPrompts: a folder without the file ran with the built-in set when its hash says
// so, and otherwise does not keep its set; a kept set must hash as run.json says.
func TestReadPrompts(t *testing.T) {
	dir := t.TempDir()
	if p, err := ReadPrompts(dir, promptset.Builtin().SHA256()); err != nil || p != promptset.Builtin() {
		t.Errorf("no file, the built-in hash: %v, %v", p, err)
	}
	other := otherPrompts(t)
	if _, err := ReadPrompts(dir, other.SHA256()); !errors.Is(err, ErrPromptsNotKept) {
		t.Errorf("no file, another hash: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PromptsFile), other.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := ReadPrompts(dir, other.SHA256()); err != nil || p.SHA256() != other.SHA256() {
		t.Errorf("the kept set: %v", err)
	}
	if _, err := ReadPrompts(dir, promptset.Builtin().SHA256()); err == nil || !strings.Contains(err.Error(), "its run.json says") {
		t.Errorf("a kept set of another hash: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, PromptsFile), []byte("--- nonsense ---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrompts(dir, other.SHA256()); err == nil || !strings.Contains(err.Error(), PromptsFile) {
		t.Errorf("a damaged set: %v", err)
	}
}
