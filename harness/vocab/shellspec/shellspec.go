// Package shellspec holds what the reference sandbox promises the model about its shell: the
// folder it works in, the Python packages it has, and how a command's output is cut. The sandbox keeps the promise,
// the prompt set states it, and the readers of trajectories take results apart by it, so it
// lives apart from all three and imports nothing of theirs.
package shellspec

import "fmt"

// Workdir is the reference sandbox's working folder, where it shows a task's snapshot: the
// sandboxes show it there, and a dataset's index rows record it (scenario_root), so it is
// spelled here once.
const Workdir = "/home/user"

// ReferencePackages are the Python packages, and versions, of the reference sandbox.
var ReferencePackages = map[string]string{"drain3": "0.9.11", "numpy": "2.4.5", "pandas": "3.0.3"}

// OutputLimit is how many characters of stdout, and of stderr, a command result keeps: the
// first and last half, as the reference harness does.
const OutputLimit = 20000

// TruncationNotice is the line the sandbox puts between the head and the tail of a stream of
// total characters cut to limit. The prompt set finds it there to put its own wording in its
// place.
func TruncationNotice(total int64, limit int) string {
	return fmt.Sprintf("\n[... output truncated: %d characters in all, limit %d; the first and last %d are shown ...]\n",
		total, limit, limit/2)
}
