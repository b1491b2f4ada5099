//go:build !linux

package guest

import (
	"fmt"
	"io"
	"runtime"
)

// Run is the guest, which runs only on Linux: elsewhere the docker backend runs a Linux build
// of aa-grade as the guest inside its containers.
func Run(io.Reader, io.Writer) error { return fmt.Errorf("needs Linux (this is %s)", runtime.GOOS) }
