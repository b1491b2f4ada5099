// Package copytree copies a folder with its files and sub-folders, for commands that assemble
// a new folder from existing ones (tasks pack, merge).
package copytree

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Copy copies every folder and file under src into dst, creating dst. A link to a file is
// copied as the file it points to (a Hub cache snapshot is links to blobs).
func Copy(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		return copyFile(p, target)
	})
}

func copyFile(src, dst string) (err error) {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	defer func() { err = errors.Join(err, out.Close()) }()
	_, err = io.Copy(out, in)
	return err
}
