//go:build unix

package hub

import (
	"errors"
	"os"
	"syscall"
)

// tryLock takes the exclusive lock huggingface_hub's filelock takes on Unix (flock), without
// waiting; errLocked when another process holds it.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLocked
	}
	return err
}

func unlock(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
