//go:build unix

package filelock

import (
	"errors"
	"os"
	"syscall"
)

// TryLock takes the exclusive flock of f, without waiting; ErrLocked when another open file
// description holds it (another process, or another os.File of the same path).
func TryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return ErrLocked
	}
	return err
}

// Unlock releases a lock TryLock took. Its error is ignored: closing f releases the lock too,
// and every caller closes f next.
func Unlock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
