package runfolder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// maxTurnLine bounds one line read whole: a turn record (its new messages, tool results cut
// by the sandbox, and the reply) or a small event. The raw request and response lines can be
// longer (a request carries the whole conversation); readers skip them without holding them.
const maxTurnLine = 64 << 20

// errLongTurn marks a line longer than maxTurnLine.
var errLongTurn = fmt.Errorf("longer than %d MiB", maxTurnLine>>20)

// TrajectoryLine is one line of a trajectory as a TrajectoryReader reads it.
type TrajectoryLine struct {
	N int // its number in the file, from 1
	// Kind is the kind the line begins with ({"kind":"...", as the writer begins every line);
	// "" when it begins with none.
	Kind  model.EventKind
	Bytes []byte // the line without its newline; nil when Err is set
	// Whole says a newline ended the line; false: the file ends in it, cut short (the episode
	// is running, or was stopped), and it is the last line read.
	Whole bool
	// Err says why the line could not be read: longer than the bound of a line read whole
	// (then Whole, and the reading goes on past it), or a read error (the last line read).
	Err error
}

// Turn decodes a turn line.
func (l TrajectoryLine) Turn() (TurnRecord, error) {
	var t TurnRecord
	err := json.Unmarshal(l.Bytes, &t)
	return t, err
}

// Unsent decodes an unsent line.
func (l TrajectoryLine) Unsent() (UnsentRecord, error) {
	var u UnsentRecord
	err := json.Unmarshal(l.Bytes, &u)
	return u, err
}

// Agent decodes an agent line.
func (l TrajectoryLine) Agent() (AgentRecord, error) {
	var a AgentRecord
	err := json.Unmarshal(l.Bytes, &a)
	return a, err
}

// Event decodes an event line (any kind but a turn, unsent messages or an agent's end).
func (l TrajectoryLine) Event() (model.Event, error) {
	var e model.Event
	err := json.Unmarshal(l.Bytes, &e)
	return e, err
}

// TrajectoryReader reads a trajectory line by line, streaming it: the one reader of
// trajectories, for the turn reader (ReadTurns, the analysis, replay) and the viewer alike.
type TrajectoryReader struct {
	r    *bufio.Reader
	want func(model.EventKind) bool
	err  error
}

// NewTrajectoryReader reads the trajectory r, yielding only the lines whose kind want accepts
// (want("") is asked of a line that begins with no kind): the others, the raw bodies above all,
// go by unread, never held.
func NewTrajectoryReader(r io.Reader, want func(model.EventKind) bool) *TrajectoryReader {
	return &TrajectoryReader{r: bufio.NewReaderSize(r, 256<<10), want: want}
}

// kindPrefix begins every line the writer writes: the encoding of an Event or a TurnRecord,
// whose first field is the kind.
var kindPrefix = []byte(`{"kind":"`)

// Lines yields the lines wanted, in order, until the end of the file, the first line cut
// short, or a read error. A read error where a line begins ends the reading and is Err's; one
// inside a line not wanted ends it as the end of the file does, and what was read stands.
func (t *TrajectoryReader) Lines() iter.Seq[TrajectoryLine] {
	return func(yield func(TrajectoryLine) bool) {
		for n := 1; ; n++ {
			head, err := t.r.Peek(len(kindPrefix) + 24) // the longest kind, with room to spare
			if len(head) == 0 {
				if err != nil && !errors.Is(err, io.EOF) {
					t.err = err
				}
				return
			}
			kind := lineKind(head)
			if !t.want(kind) {
				if skipLine(t.r) != nil {
					return
				}
				continue
			}
			b, whole, err := nextLine(t.r, maxTurnLine, errLongTurn)
			if errors.Is(err, errLongTurn) {
				whole = true // skipped, whether or not a newline ended it: the reading goes on
			}
			if !yield(TrajectoryLine{N: n, Kind: kind, Bytes: b, Whole: whole, Err: err}) || !whole {
				return
			}
		}
	}
}

// Err is the read error that ended the reading where a line begins, nil at the end of the file.
func (t *TrajectoryReader) Err() error { return t.err }

// lineKind is the kind the beginning of a line names, "" when it names none.
func lineKind(head []byte) model.EventKind {
	rest, ok := bytes.CutPrefix(head, kindPrefix)
	if !ok {
		return ""
	}
	kind, _, ok := bytes.Cut(rest, []byte(`"`))
	if !ok {
		return ""
	}
	return model.EventKind(kind)
}

// ReadTurns reads the turn records of the trajectory in an episode folder (OpenTrajectory),
// in order, skipping the events. A turn line that is not a record, or too long to be one, is an
// error naming the file and line; a last line a crash cut short is left out.
func ReadTurns(dir string) ([]TurnRecord, error) {
	f, err := OpenTrajectory(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := filepath.Join(dir, TrajectoryFile)
	var turns []TurnRecord
	for line := range NewTrajectoryReader(f, func(k model.EventKind) bool { return k == model.KindTurn }).Lines() {
		if line.Err != nil {
			return nil, fmt.Errorf("%s:%d: a turn record %w", path, line.N, line.Err)
		}
		if !line.Whole {
			break // cut short by a crash
		}
		t, err := line.Turn()
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line.N, err)
		}
		turns = append(turns, t)
	}
	return turns, nil
}
