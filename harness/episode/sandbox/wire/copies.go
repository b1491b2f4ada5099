package wire

import "encoding/json"

// CopiesEnv carries the folders to copy to the guest run as the copier: the docker backend
// runs the guest a second time in the episode's container (an exec), as the container's root
// with no capability, to copy the task's files and the agent folder from the task's read-only
// volume into the container's tmpfs before the first command; the guest itself runs as
// nobody from its start. The copier copies and ends; it serves no command.
const CopiesEnv = "AA_GRADE_GUEST_COPIES"

// Copy is a folder's content copied into another folder: files and folders stay the copier's
// (root's) and lose their write bits, so that commands, run as nobody, can neither change
// them nor, in a sticky folder, remove or rename them.
type Copy struct {
	From string `json:"from"`
	To   string `json:"to"`
	// Sticky makes To, once filled, writable by all but for what others own (as /tmp is): the
	// workspace, where commands write beside the task's files.
	Sticky bool `json:"sticky,omitempty"`
}

// EncodeCopies is the environment entry that hands the copies to the copier.
func EncodeCopies(copies []Copy) (string, error) {
	b, err := json.Marshal(copies)
	if err != nil {
		return "", err
	}
	return CopiesEnv + "=" + string(b), nil
}
