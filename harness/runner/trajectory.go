package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
)

// ErrNotRecorded marks an episode whose trajectory could not be written (a full disk): the
// run stops, as when a result cannot be recorded, rather than spend calls it cannot keep.
var ErrNotRecorded = errors.New("the trajectory could not be written")

// trajectory writes one episode's trajectory.jsonl: turn records (harness.TurnRecord) with
// the wire events of each call (kinds request, response, retry) before them, in order. An
// episode's calls are sequential, so it needs no lock. The first failed write is kept, no
// line is written after it (a line cut by a full disk stays the last), and failed is called.
type trajectory struct {
	f       *os.File
	enc     *json.Encoder
	new     harness.NewMessages
	retries int
	err     error
	failed  func(error)
}

func newTrajectory(f *os.File, failed func(error)) *trajectory {
	return &trajectory{f: f, enc: json.NewEncoder(f), failed: failed}
}

func (t *trajectory) write(v any) {
	if t.err != nil {
		return
	}
	if err := t.enc.Encode(v); err != nil {
		t.err = fmt.Errorf("%w: %w", ErrNotRecorded, err)
		t.failed(t.err)
	}
}

func (t *trajectory) wire(e model.Event) {
	if e.Kind == "retry" {
		t.retries++
	}
	t.write(e)
}

func (t *trajectory) turn(n int, req model.Request, reply model.Reply, err error) {
	entry := harness.TurnRecord{Kind: "turn", Turn: n, Summary: req.Summary, At: time.Now().UTC(),
		Input: t.new.Next(req, err != nil), Reply: reply.Message, Usage: reply.Usage, Cut: reply.Cut}
	if err != nil {
		entry.Error = err.Error()
	}
	t.write(entry)
}

// close closes the file and returns the first failure to write it, if any.
func (t *trajectory) close() error {
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return t.err
}
