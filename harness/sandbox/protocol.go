package sandbox

import "time"

// request is one request to the agent, one JSON object a line: run a command, or read or
// check a file of the workspace.
type request struct {
	Op      string        `json:"op"`
	Cmd     string        `json:"cmd,omitempty"`
	Timeout time.Duration `json:"timeout,omitempty"`
	Name    string        `json:"name,omitempty"`
	Limit   int64         `json:"limit,omitempty"`
}

const (
	opRun   = "run"
	opRead  = "read"
	opCheck = "check"
)
