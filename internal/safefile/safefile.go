// Package safefile reads files that someone else controls (a model's commands, another
// harness's agent) without letting them steer the reader: the name is resolved inside a root
// folder and never leaves it through a link, only a regular file is read, opening never
// blocks (a FIFO, a device), and no more than a bound is read.
package safefile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
)

var (
	// ErrNotRegular marks a name that is a folder, a FIFO, a socket or a device.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge marks a file larger than the bound given.
	ErrTooLarge = errors.New("file too large")
)

// Open opens name inside root for reading, refusing anything but a regular file. Links are
// followed only while they stay inside root (os.Root); the open is non-blocking, so a FIFO
// with no writer is refused at once instead of hanging the caller.
func Open(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	info, err := f.Stat()
	if err != nil {
		_ = f.Close() // read only
		return nil, err
	}
	if !info.Mode().IsRegular() {
		_ = f.Close() // read only
		return nil, fmt.Errorf("%s: %w (%s)", name, ErrNotRegular, kind(info.Mode()))
	}
	return f, nil
}

// Read reads the regular file name inside root, refusing one larger than limit bytes
// without reading past the limit.
func Read(root *os.Root, name string, limit int64) ([]byte, error) {
	f, err := Open(root, name)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }() // read only
	b, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	if int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: %w (more than %d bytes)", name, ErrTooLarge, limit)
	}
	return b, nil
}

// ReadPath reads a regular file at a host path with Read's protections against its last
// component (its folder is trusted).
func ReadPath(path string, limit int64) ([]byte, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // a folder handle
	return Read(root, filepath.Base(path), limit)
}

func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a folder"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeSocket != 0:
		return "a socket"
	case m&os.ModeDevice != 0:
		return "a device"
	default:
		return "mode " + m.String()
	}
}
