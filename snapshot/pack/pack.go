// Package pack writes task folders as a dataset in the Hugging Face Hub layout of
// ITBench-AA, ready to upload: sre/data.jsonl with its six fields and one folder per task.
package pack

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/internal/copytree"
)

// Options describe the index rows to write.
type Options struct {
	Split string // source_split of every row: public or private
}

// Write copies the tasks into out/sre/<id>/ and writes out/sre/data.jsonl. out must not exist
// or be empty; on failure nothing partial is left at out.
func Write(out string, tasks []data.Task, opts Options) error {
	if entries, err := os.ReadDir(out); err == nil && len(entries) > 0 {
		return fmt.Errorf("pack: %s is not empty", out)
	}
	if opts.Split == "" {
		opts.Split = data.SplitPublic
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(out)), ".pack-*")
	if err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	// The folder packed; else a hidden folder beside the output, never read as one.
	defer func() { _ = os.RemoveAll(tmp) }()
	sre := filepath.Join(tmp, data.Category)
	seen := map[string]bool{}
	var index strings.Builder
	for _, t := range tasks {
		if seen[t.ID] {
			return fmt.Errorf("pack: two tasks are named %s", t.ID)
		}
		seen[t.ID] = true
		if err := copytree.Copy(t.Dir, filepath.Join(sre, t.ID)); err != nil {
			return fmt.Errorf("pack %s: %w", t.ID, err)
		}
		row, err := json.Marshal(data.NewIndexRow(t.ID, opts.Split, t.GroundTruth))
		if err != nil {
			return err
		}
		index.Write(row)
		index.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(sre, data.IndexFile), []byte(index.String()), 0o644); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	if err := os.Remove(out); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("pack: %w", err)
	}
	if err := os.Rename(tmp, out); err != nil {
		return fmt.Errorf("pack: %w", err)
	}
	return nil
}
