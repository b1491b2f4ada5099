package main

import (
	"os"

	"golang.org/x/sys/windows"
)

// terminalWidth is the width in columns of the console window f is, and whether f is one.
func terminalWidth(f *os.File) (int, bool) {
	var info windows.ConsoleScreenBufferInfo
	if err := windows.GetConsoleScreenBufferInfo(windows.Handle(f.Fd()), &info); err != nil {
		return 0, false
	}
	return int(info.Window.Right-info.Window.Left) + 1, true
}

// notifyResize does nothing: a console signals no resize; the live display reads the width
// again at each redraw.
func notifyResize(chan<- os.Signal) {}

func stopResize(chan<- os.Signal) {}
