package sandbox

import "time"

// DefaultCommandTimeout is how long a shell command may run, as in the reference harness. The
// shell tool itself (its name, its description, how its results read) is the harness's
// prompt set's.
const DefaultCommandTimeout = 300 * time.Second
