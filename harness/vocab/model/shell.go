package model

import "encoding/json"

// ShellArgs are the arguments of a call of the shell tool, {"cmd": "..."}, whatever the
// tool's name in the run's prompt set: read here once for the loop that runs the command, the
// runner's progress line and the readers of trajectories.
type ShellArgs struct {
	Cmd *string `json:"cmd"` // nil when the arguments name no command
}

// ParseShellArgs reads the arguments of a shell tool call.
func ParseShellArgs(arguments string) (ShellArgs, error) {
	var args ShellArgs
	err := json.Unmarshal([]byte(arguments), &args)
	return args, err
}

// ShellCommand is the command of a shell tool call; ok is false for arguments that name none.
func ShellCommand(arguments string) (cmd string, ok bool) {
	args, err := ParseShellArgs(arguments)
	if err != nil || args.Cmd == nil {
		return "", false
	}
	return *args.Cmd, true
}
