//go:build linux

package guest

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// tree is what a folder holds, read before a mount hides it: folders, links, and regular
// files kept open; not sockets, FIFOs or devices, which are the host's.
type tree []treeEntry

type treeEntry struct {
	rel    string
	mode   fs.FileMode
	target string   // a link's
	file   *os.File // a regular file's, open
}

func readTree(dir string) (tree, error) {
	var t tree
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := treeEntry{rel: rel, mode: info.Mode()}
		switch {
		case d.IsDir():
		case info.Mode()&fs.ModeSymlink != 0:
			if e.target, err = os.Readlink(p); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			if e.file, err = os.Open(p); err != nil {
				return err
			}
		default:
			return nil // a socket, FIFO or device stays the host's, out of reach
		}
		t = append(t, e)
		return nil
	})
	if err != nil {
		t.close()
		return nil, fmt.Errorf("workspace: %w", err)
	}
	return t, nil
}

// write makes the tree again under dir (folders come before what they hold).
func (t tree) write(dir string) error {
	for _, e := range t {
		p := filepath.Join(dir, e.rel)
		var err error
		switch {
		case e.mode.IsDir():
			if err = os.Mkdir(p, 0o700); err == nil {
				err = os.Chmod(p, e.mode.Perm()|e.mode&fs.ModeSticky)
			}
		case e.file != nil:
			var f *os.File
			if f, err = os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, e.mode.Perm()); err == nil {
				_, err = io.Copy(f, e.file)
				err = errors.Join(err, f.Close())
			}
		default:
			err = os.Symlink(e.target, p)
		}
		if err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	return nil
}

func (t tree) close() {
	for _, e := range t {
		if e.file != nil {
			_ = e.file.Close() // read only
		}
	}
}
