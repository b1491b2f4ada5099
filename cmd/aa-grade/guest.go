package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/guest"
)

// newGuestCommand is the hidden command a sandbox runs inside: it serves shell commands over
// stdin and stdout (see package guest).
func newGuestCommand() *cli.Command {
	return &cli.Command{
		Name:   sandbox.GuestCommand,
		Hidden: true,
		Action: func(context.Context, *cli.Command) error { return guest.Run(os.Stdin, os.Stdout) },
	}
}

// newCgroupExecCommand is the hidden command that starts a sandbox inside its pids cgroup.
func newCgroupExecCommand() *cli.Command {
	return &cli.Command{
		Name:            sandbox.CgroupExecCommand,
		Hidden:          true,
		SkipFlagParsing: true,
		Action:          func(_ context.Context, cmd *cli.Command) error { return sandbox.RunCgroupExec(cmd.Args().Slice()) },
	}
}
