// Package filelock takes exclusive locks on open files without waiting: the locks
// huggingface_hub's filelock takes (flock on Unix, a lock of the first byte on Windows), so
// aa-grade and the Python tools exclude each other on the shared cache. The system drops such
// a lock when the file is closed or its process dies, however it dies (kill -9 included), so
// a lock never outlives its holder.
package filelock

import "errors"

// ErrLocked says another open file (in practice another process) holds the lock.
var ErrLocked = errors.New("locked by another process")
