// The flags that shape what a command prints, shared by the commands that print results
// (--json) or show progress (--no-progress), so that each means the same everywhere.

package main

import "github.com/urfave/cli/v3"

// jsonFlag is --json, with usage saying what the command's JSON holds.
func jsonFlag(dst *bool, usage string) cli.Flag {
	return &cli.BoolFlag{Name: "json", Destination: dst, Sources: env("json"), Usage: usage}
}

// noProgressFlag asks for plain progress lines where a terminal would get a live display.
func noProgressFlag(dest *bool) cli.Flag {
	return &cli.BoolFlag{Name: "no-progress", Destination: dest, Sources: env("no-progress"),
		Usage: "print progress as plain log lines, not a live display (as when the output is not a terminal)"}
}
