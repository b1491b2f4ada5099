//go:build windows

package sandbox

import "os"

// processExists: on Windows finding the process opened it, so it is there.
func processExists(*os.Process) bool { return true }
