//go:build linux

package guest

import (
	"os"
	"strings"
)

// oomGuard makes the commands the guest starts the OOM killer's first choice (score +1000,
// which anyone may raise), while the guest keeps its own. Without it, an episode that fills
// its memory limit with tmpfs pages, which no process owns, would lose the guest: the largest
// process left. The file stays open because Landlock would refuse opening it again.
type oomGuard struct {
	f    *os.File
	mine string // the guest's own score, restored after each start
}

func protectFromOOM() *oomGuard {
	f, err := os.OpenFile("/proc/self/oom_score_adj", os.O_RDWR, 0)
	if err != nil {
		return nil // best effort: no /proc
	}
	b := make([]byte, 16)
	n, err := f.ReadAt(b, 0)
	if n == 0 {
		_ = f.Close() // nothing written
		return nil
	}
	_ = err // io.EOF after the value
	return &oomGuard{f: f, mine: strings.TrimSpace(string(b[:n]))}
}

// start runs start (which forks a command) with the guest's score raised, so that the command
// inherits the raised one, then restores the guest's. (nil: no guard.)
func (g *oomGuard) start(start func() error) error {
	if g == nil {
		return start()
	}
	// Best effort, as the guard is: a score not raised leaves the command the OOM killer's
	// choice by size alone; one not restored leaves the guest that choice before its commands.
	_, _ = g.f.WriteAt([]byte("1000"), 0)
	defer func() { _, _ = g.f.WriteAt([]byte(g.mine), 0) }()
	return start()
}
