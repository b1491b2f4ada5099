package runner

import (
	"encoding/json"
	"io"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
)

// trajectory writes one episode's trajectory.jsonl: turn records (harness.TurnRecord) with
// the wire events of each call (kinds request, response, retry) before them, in order. An
// episode's calls are sequential, so it needs no lock.
type trajectory struct {
	enc     *json.Encoder
	new     harness.NewMessages
	retries int
}

func newTrajectory(w io.Writer) *trajectory { return &trajectory{enc: json.NewEncoder(w)} }

func (t *trajectory) wire(e model.Event) {
	if e.Kind == "retry" {
		t.retries++
	}
	t.enc.Encode(e)
}

func (t *trajectory) turn(n int, req model.Request, reply model.Reply, err error) {
	entry := harness.TurnRecord{Kind: "turn", Turn: n, Summary: req.Summary, At: time.Now().UTC(),
		Input: t.new.Next(req, err != nil), Reply: reply.Message, Usage: reply.Usage}
	if err != nil {
		entry.Error = err.Error()
	}
	t.enc.Encode(entry)
}
