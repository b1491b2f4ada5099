//go:build unix

package main

import (
	"os"
	"os/signal"

	"golang.org/x/sys/unix"
)

// terminalWidth is the width in columns of the terminal f is, and whether f is one.
func terminalWidth(f *os.File) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(f.Fd()), unix.TIOCGWINSZ)
	if err != nil {
		return 0, false
	}
	return int(ws.Col), true
}

// notifyResize sends to c at each resize of the terminal (SIGWINCH) until stopResize.
func notifyResize(c chan<- os.Signal) { signal.Notify(c, unix.SIGWINCH) }

func stopResize(c chan<- os.Signal) { signal.Stop(c) }
