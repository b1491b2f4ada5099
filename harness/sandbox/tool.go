package sandbox

import (
	"encoding/json"
	"time"
)

// The shell tool exactly as the reference harness offers it to the model.
const (
	ShellToolName         = "code_exec"
	DefaultCommandTimeout = 300 * time.Second
)

// ShellToolDescription asks for relative paths, as the reference does: the workspace is the
// current folder.
const ShellToolDescription = "Run a bash command in the working directory (bash -c CMD) and return its exit code, " +
	"stdout and stderr. Use relative paths. Each of stdout and stderr is cut to 20,000 characters " +
	"(the first and last 10,000 are kept). Commands time out after 300 seconds."

// ShellToolParameters is the JSON schema of the tool's one required string parameter, cmd.
var ShellToolParameters = json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string","description":"The bash command to run."}},"required":["cmd"],"additionalProperties":false}`)
