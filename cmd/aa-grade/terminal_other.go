//go:build !unix && !windows

package main

import "os"

// terminalWidth says no file is a terminal here: progress prints plain lines.
func terminalWidth(*os.File) (int, bool) { return 0, false }

func notifyResize(chan<- os.Signal) {}

func stopResize(chan<- os.Signal) {}
