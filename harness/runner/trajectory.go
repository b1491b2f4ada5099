package runner

import (
	"encoding/json"
	"io"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
)

// Turn is one model call as trajectory.jsonl keeps it (kind "turn"): the messages new since
// the previous call (tool results, harness messages; the prompts on the first), the reply and
// its usage. Wire events (kinds request, response, retry) sit between turns, in order.
type Turn struct {
	Kind    string            `json:"kind"`
	Turn    int               `json:"turn"`
	Summary bool              `json:"summary,omitempty"` // a summarisation call, not a turn
	At      time.Time         `json:"at"`
	Input   []harness.Message `json:"input"`
	Reply   harness.Message   `json:"reply"`
	Usage   harness.Usage     `json:"usage"`
	Error   string            `json:"error,omitempty"`
}

// trajectory writes one episode's trajectory.jsonl. An episode's calls are sequential, so
// it needs no lock.
type trajectory struct {
	enc  *json.Encoder
	seen int // messages of the conversation already written
}

func newTrajectory(w io.Writer) *trajectory { return &trajectory{enc: json.NewEncoder(w)} }

func (t *trajectory) wire(e model.Event) { t.enc.Encode(e) }

func (t *trajectory) turn(n int, req harness.Request, reply harness.Reply, err error) {
	entry := Turn{Kind: "turn", Turn: n, Summary: req.Summary, At: time.Now().UTC(), Input: NewInput(req.Messages, t.seen),
		Reply: reply.Message, Usage: reply.Usage}
	if err != nil {
		entry.Error = err.Error()
	}
	t.enc.Encode(entry)
	switch {
	case req.Summary:
		t.seen = 2 // the history starts anew after the prompts
	case err != nil:
		t.seen = len(req.Messages)
	default:
		t.seen = len(req.Messages) + 1 // the reply joins the conversation
	}
}

// NewInput is the part of a request's conversation not yet recorded: everything after the
// seen messages, or, when the history was shortened by a summary, everything after the two
// prompts.
func NewInput(messages []harness.Message, seen int) []harness.Message {
	if seen > len(messages) {
		seen = min(2, len(messages))
	}
	return messages[seen:]
}
