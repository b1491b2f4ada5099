package promptset

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// maxPromptsFile bounds the read of a run folder's prompt set (the built-in one is 10 kB).
const maxPromptsFile = 4 << 20

// ErrNotKept marks a run that used a set of its own and whose folder does not keep it
// (a folder written before aa-grade kept the set, or a file removed since).
var ErrNotKept = errors.New("the run folder does not keep the prompt set it ran with")

// ReadRun reads the prompt set of the run folder dir, whose header gives its hash sha. A
// folder without the file ran with the built-in set when the hashes agree; otherwise the
// error is ErrNotKept, and a file whose hash differs from the header's is an error too.
func ReadRun(dir, sha string) (*Set, error) {
	doc, err := safefile.ReadPath(filepath.Join(dir, runfolder.PromptsFile), maxPromptsFile)
	switch {
	case errors.Is(err, fs.ErrNotExist) && (sha == "" || sha == builtin.SHA256()):
		return builtin, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("%w (prompt_sha256 %.12s)", ErrNotKept, sha)
	case err != nil:
		return nil, fmt.Errorf("read the run's prompt set: %w", err)
	}
	p, err := Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("the run's prompt set %s: %w", runfolder.PromptsFile, err)
	}
	if sha != "" && p.SHA256() != sha {
		return nil, fmt.Errorf("the run's prompt set %s has sha256 %.12s, its run.json says %.12s", runfolder.PromptsFile, p.SHA256(), sha)
	}
	return p, nil
}
