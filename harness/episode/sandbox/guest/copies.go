//go:build linux

package guest

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
)

// runCopies is the guest run as the docker backend's copier (wire.CopiesEnv): it copies and
// reports whether it was asked to (then the guest serves nothing). It runs as the container's
// root with no capability, beside the episode's guest (nobody), before the first command: no
// untrusted code runs while it does, and it reads only the task's volume, which aa-grade
// filled and the container mounts read-only.
func runCopies() (asked bool, err error) {
	encoded, ok := os.LookupEnv(wire.CopiesEnv)
	if !ok {
		return false, nil
	}
	var copies []wire.Copy
	if err := json.Unmarshal([]byte(encoded), &copies); err != nil {
		return true, fmt.Errorf("sandbox copies: %w", err)
	}
	if os.Geteuid() != 0 {
		// The copies would be that user's, and so writable by commands if it is theirs.
		return true, errors.New("sandbox copies: the copier must run as the container's root")
	}
	return true, copyTrees(copies)
}

// copyTrees copies each folder's content into its destination: what it makes is root's,
// without write bits, so that commands can read it but not change it.
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

// copyTree copies the content of from into to. Both are opened as roots (os.Root): no name
// in either, nor a link the copy makes, leads the copy out of them.
func copyTree(from, to string) error {
	src, err := os.OpenRoot(from)
	if err != nil {
		return err
	}
	defer func() { _ = src.Close() }() // read only
	dst, err := os.OpenRoot(to)
	if err != nil {
		return err
	}
	defer func() { _ = dst.Close() }() // the files' own closes are checked (copyFile)
	return fs.WalkDir(src.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info() // the entry itself, a link not followed
		if err != nil {
			return err
		}
		mode := info.Mode().Perm() &^ 0o222
		switch {
		case rel == ".":
			return nil // the destination is the container's, as it made it
		case d.IsDir():
			if err := dst.Mkdir(rel, 0o755); err != nil {
				return err
			}
			return dst.Chmod(rel, 0o755) // the umask aside; root's, so no command writes in it
		case info.Mode().IsRegular():
			if err := copyFile(src, dst, rel, mode); err != nil {
				return err
			}
			return dst.Chtimes(rel, info.ModTime(), info.ModTime()) // as the host's file shows them
		case info.Mode()&fs.ModeSymlink != 0: // an agent folder's (node_modules/.bin): as it was
			target, err := src.Readlink(rel)
			if err != nil {
				return err
			}
			return dst.Symlink(target, rel)
		}
		return nil // aa-grade puts nothing else there
	})
}

// copyFile copies the regular file rel of src into a new file of dst, of mode.
func copyFile(src, dst *os.Root, rel string, mode fs.FileMode) error {
	in, err := src.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	out, err := dst.OpenFile(rel, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // the copy's error is the one to tell
		return err
	}
	if err := out.Chmod(mode); err != nil { // the umask aside
		_ = out.Close()
		return err
	}
	return out.Close()
}
