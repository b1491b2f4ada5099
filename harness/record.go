package harness

import "time"

// TurnRecord is one model call as a trajectory keeps it (kind "turn"): the messages new since
// the previous call (tool results and harness messages; the prompts on the first), the reply
// and its usage. A replay plays these back.
type TurnRecord struct {
	Kind    string    `json:"kind"` // "turn"
	Turn    int       `json:"turn"`
	Summary bool      `json:"summary,omitempty"` // a summarisation call, not a turn
	At      time.Time `json:"at"`
	Input   []Message `json:"input"`
	Reply   Message   `json:"reply"`
	Usage   Usage     `json:"usage"`
	Error   string    `json:"error,omitempty"`
}

// NewMessages follows a conversation call by call and tells which messages each call adds, so
// a trajectory records every message once and a replay can compare like with like.
type NewMessages struct{ seen int }

// Next returns the messages of req not seen in earlier calls, then notes the call: a reply
// joins the conversation, a summary restarts it after the two prompts, a failed call adds
// nothing. After a history was shortened, everything after the prompts counts as new.
func (n *NewMessages) Next(req Request, failed bool) []Message {
	seen := n.seen
	if seen > len(req.Messages) {
		seen = min(2, len(req.Messages))
	}
	switch {
	case req.Summary:
		n.seen = 2
	case failed:
		n.seen = len(req.Messages)
	default:
		n.seen = len(req.Messages) + 1
	}
	return req.Messages[seen:]
}
