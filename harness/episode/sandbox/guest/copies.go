//go:build linux

package guest

import (
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// copyTrees copies each folder's content into its destination, as the guest (root, before it
// becomes the sandbox's user) has it: what it makes is root's, without write bits, so that
// commands can read it but not change it. The sources are aa-grade's own read-only volume,
// filled before the container started; no command has run yet.
func copyTrees(copies []wire.Copy) error {
	for _, c := range copies {
		if err := copyTree(c.From, c.To); err != nil {
			return fmt.Errorf("copy %s into %s: %w", c.From, c.To, err)
		}
		// The container's runtime gave the tmpfs the mode of the folder it covers.
		if c.Sticky {
			if err := os.Chmod(c.To, 0o777|fs.ModeSticky); err != nil {
				return fmt.Errorf("make %s sticky: %w", c.To, err)
			}
		}
	}
	return nil
}

func copyTree(from, to string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(from, p)
		if err != nil {
			return err
		}
		dst := filepath.Join(to, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() &^ 0o222
		switch {
		case rel == ".":
			return nil // the destination is the container's, as it made it
		case d.IsDir():
			if err := os.Mkdir(dst, 0o755); err != nil {
				return err
			}
			return os.Chmod(dst, 0o755) // the umask aside; root's, so no command writes in it
		case info.Mode().IsRegular():
			if err := copyFile(p, dst, mode); err != nil {
				return err
			}
			return os.Chtimes(dst, info.ModTime(), info.ModTime()) // as the host's file shows them
		case info.Mode()&fs.ModeSymlink != 0: // an agent folder's (node_modules/.bin): as it was
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		return nil // aa-grade puts nothing else there
	})
}

func copyFile(src, dst string, mode fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // the copy's error is the one to tell
		return err
	}
	return out.Close()
}
