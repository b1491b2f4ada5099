package judge

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// ErrConflict marks two caches holding different replies to the same question: joining them
// would make a grade depend on which one was read first.
var ErrConflict = errors.New("the judge caches disagree")

// Caches are the answers of several cache folders, read and checked together before any is
// written, so that joining runs whose judges disagree leaves nothing half written.
type Caches struct {
	files    map[string][]byte // file name (the question's key) -> its bytes, as the first folder had it
	Warnings []string          // files skipped: unreadable, or not an answer (the judge would ask again)
}

// ReadCaches reads the answer files of the cache folders dirs (a folder that does not exist
// has none). Two folders answering the same question differently are ErrConflict, naming both
// files; the same answer twice is kept once.
func ReadCaches(dirs ...string) (*Caches, error) {
	c := &Caches{files: map[string][]byte{}}
	from := map[string]string{}
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read the judge cache: %w", err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !strings.HasSuffix(e.Name(), ".json") {
				continue // atomicfile's leftovers, anything else
			}
			path := filepath.Join(dir, e.Name())
			b, err := safefile.ReadPath(path, 2*maxReplyBytes)
			var entry cacheEntry
			if err == nil {
				err = json.Unmarshal(b, &entry)
			}
			if err != nil {
				c.Warnings = append(c.Warnings, fmt.Sprintf("%s: skipped, not a judge answer (%v)", path, err))
				continue
			}
			prev, seen := c.files[e.Name()]
			if !seen {
				c.files[e.Name()], from[e.Name()] = b, path
				continue
			}
			var first cacheEntry
			_ = json.Unmarshal(prev, &first) // decoded once already, when it was read
			if first != entry {
				return nil, fmt.Errorf("%w: %s and %s answer the same question differently", ErrConflict, from[e.Name()], path)
			}
		}
	}
	return c, nil
}

// Len is the number of answers.
func (c *Caches) Len() int { return len(c.files) }

// Write writes every answer into the cache folder dir, each file atomically.
func (c *Caches) Write(dir string) error {
	if len(c.files) == 0 {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(c.files))
	for name := range c.files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := atomicfile.WriteFile(filepath.Join(dir, name), c.files[name]); err != nil {
			return fmt.Errorf("write the judge cache: %w", err)
		}
	}
	return nil
}
