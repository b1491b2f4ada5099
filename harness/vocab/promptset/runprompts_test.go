package promptset

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// TestRunPrompts: a folder without the file ran with the built-in set when its hash says
// so, and otherwise does not keep its set; a kept set must hash as run.json says.
func TestRunPrompts(t *testing.T) {
	dir := t.TempDir()
	if p, err := ReadRun(dir, Builtin().SHA256()); err != nil || p != Builtin() {
		t.Errorf("no file, the built-in hash: %v, %v", p, err)
	}
	stirrup := stirrupPrompts(t)
	if _, err := ReadRun(dir, stirrup.SHA256()); !errors.Is(err, ErrNotKept) {
		t.Errorf("no file, another hash: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.PromptsFile), stirrup.Format(), 0o644); err != nil {
		t.Fatal(err)
	}
	if p, err := ReadRun(dir, stirrup.SHA256()); err != nil || p.SHA256() != stirrup.SHA256() {
		t.Errorf("the kept set: %v", err)
	}
	if _, err := ReadRun(dir, Builtin().SHA256()); err == nil || !strings.Contains(err.Error(), "its run.json says") {
		t.Errorf("a kept set of another hash: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, runfolder.PromptsFile), []byte("--- nonsense ---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadRun(dir, stirrup.SHA256()); err == nil || !strings.Contains(err.Error(), runfolder.PromptsFile) {
		t.Errorf("a damaged set: %v", err)
	}
}
