package runfolder

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// maxPromptsFile bounds the read of a run folder's prompt set (the built-in one is 10 kB).
const maxPromptsFile = 4 << 20

// ErrPromptsNotKept marks a run that used a set of its own and whose folder does not keep it
// (a folder written before aa-grade kept the set, or a file removed since).
var ErrPromptsNotKept = errors.New("the run folder does not keep the prompt set it ran with")

// ReadPrompts reads the prompt set of the run folder dir, whose header gives its hash sha. A
// folder without the file ran with the built-in set when the hashes agree; otherwise the
// error is ErrPromptsNotKept, and a file whose hash differs from the header's is an error too.
// It is the run folder's, not the prompt set's, so that the settings run.json holds can hold
// a prompt set (settings.Settings) with no cycle of imports.
func ReadPrompts(dir, sha string) (*promptset.Set, error) {
	doc, err := safefile.ReadPath(filepath.Join(dir, PromptsFile), maxPromptsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (sha == "" || sha == promptset.Builtin().SHA256()):
		return promptset.Builtin(), nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w (prompt_sha256 %.12s)", ErrPromptsNotKept, sha)
	case err != nil:
		return nil, fmt.Errorf("read the run's prompt set: %w", err)
	}
	p, err := promptset.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("the run's prompt set %s: %w", PromptsFile, err)
	}
	if sha != "" && p.SHA256() != sha {
		return nil, fmt.Errorf("the run's prompt set %s has sha256 %.12s, its run.json says %.12s", PromptsFile, p.SHA256(),
			sha)
	}
	return p, nil
}
