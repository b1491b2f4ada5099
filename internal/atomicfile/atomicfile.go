// Package atomicfile writes files that readers see whole or not at all: through a temporary
// file in the same folder, renamed into place.
package atomicfile

import (
	"os"
	"path/filepath"
)

// WriteFile writes data to path (creating its folders) with permission 0644. A reader sees the
// old file or the new one, never a part; on failure no temporary file is left behind.
func WriteFile(path string, data []byte) error {
	return WriteFilePerm(path, data, 0o644)
}

// WriteFilePerm is WriteFile with the new file's permission given (0755 for a program, which
// then appears whole and executable, or not at all).
func WriteFilePerm(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		// The failure is the one to tell; os errors name the file, callers say what it was for.
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}
