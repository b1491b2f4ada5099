package wire

import "time"

// Result is the outcome of one command: the guest's answer to a run request, and what
// Sandbox.Run returns once aa-grade has clipped it.
type Result struct {
	ExitCode    int           `json:"exit_code"`
	Stdout      string        `json:"stdout"` // truncated to shellspec.OutputLimit characters
	Stderr      string        `json:"stderr"`
	StdoutChars int64         `json:"stdout_chars"` // characters before truncation
	StderrChars int64         `json:"stderr_chars"`
	TimedOut    bool          `json:"timed_out"`
	Duration    time.Duration `json:"duration"`
}
