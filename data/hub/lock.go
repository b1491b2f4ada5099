package hub

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aa-grade/aa-grade/internal/filelock"
)

// lockFile takes the exclusive lock huggingface_hub takes on a blob (see filelock), waiting
// for another process to release it.
func lockFile(ctx context.Context, path string) (func(), error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err := filelock.TryLock(f)
		if err == nil {
			return func() { filelock.Unlock(f); _ = f.Close() }, nil // a lock file holds nothing to lose
		}
		if !errors.Is(err, filelock.ErrLocked) {
			_ = f.Close() // the lock's error is the one to tell
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			_ = f.Close() // the lock was not taken; the file holds nothing
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
