package main

import (
	"context"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// newAgentCommand is the hidden command a sandbox runs inside: it serves shell commands over
// stdin and stdout (see package sandbox).
func newAgentCommand() *cli.Command {
	return &cli.Command{
		Name:   sandbox.AgentCommand,
		Hidden: true,
		Action: func(context.Context, *cli.Command) error { return sandbox.RunAgent(os.Stdin, os.Stdout) },
	}
}
