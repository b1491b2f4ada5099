package runfolder

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotWritable marks a run folder, or a file of it, that the run could not write: found
// before the first episode, not after it was played and paid for.
var ErrNotWritable = errors.New("the run could not write it")

// CheckWritable finds what the run could not write before it plays anything: results.jsonl,
// which it appends to, and every folder it writes in (the run folder, whose files it replaces
// whole, and the folders of the episodes and the judge already there), each tried by making a
// file in it and removing it.
func (f *Folder) CheckWritable() error {
	results := filepath.Join(f.Dir, ResultsFile)
	if file, err := os.OpenFile(results, os.O_WRONLY|os.O_APPEND, 0); err == nil {
		_ = file.Close() // nothing written: opening it was the check
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: %w: %w", results, ErrNotWritable, err)
	}
	if err := tryWrite(f.Dir); err != nil {
		return err
	}
	for _, sub := range []string{EpisodesDir, JudgeDir} {
		err := filepath.WalkDir(filepath.Join(f.Dir, sub), func(path string, d fs.DirEntry, err error) error {
			switch {
			case errors.Is(err, fs.ErrNotExist):
				return nil
			case err != nil:
				return fmt.Errorf("%s: %w: %w", path, ErrNotWritable, err)
			case d.IsDir():
				return tryWrite(path)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// tryWrite makes a file in dir and removes it.
func tryWrite(dir string) error {
	file, err := os.CreateTemp(dir, ".aa-grade-write-check-*")
	if err != nil {
		return fmt.Errorf("%s: %w: %w", dir, ErrNotWritable, err)
	}
	_ = file.Close() // nothing written: making it was the check
	return os.Remove(file.Name())
}

// EpisodeBytes is what the episodes the folder holds take on the disk: the mean bytes of an
// episode's folder, and how many there are (0: none, and no mean).
func (f *Folder) EpisodeBytes() (mean int64, episodes int) {
	var total int64
	repeats, _ := filepath.Glob(filepath.Join(f.Dir, EpisodesDir, "*", "*"))
	for _, dir := range repeats {
		_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() {
				if info, err := d.Info(); err == nil {
					total += info.Size()
				}
			}
			return nil // what cannot be read counts nothing
		})
	}
	if len(repeats) == 0 {
		return 0, 0
	}
	return total / int64(len(repeats)), len(repeats)
}
