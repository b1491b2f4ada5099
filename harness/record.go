package harness

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/klauspost/compress/zstd"

	"github.com/aa-grade/aa-grade/internal/safefile"
)

// TrajectoryFile is an episode's record, written as the episode goes. When the episode ends it
// is compressed to TrajectoryFile + ".zst": every request carries the whole conversation, so
// the plain file grows with the square of the turns (tens of MB for a long episode) while the
// compressed one stays near the size of the conversation itself (60x smaller, measured).
const TrajectoryFile = "trajectory.jsonl"

// OpenTrajectory opens the trajectory in an episode folder: the compressed file of a finished
// episode, else the plain one of an episode still running or cut short.
func OpenTrajectory(dir string) (io.ReadCloser, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return OpenTrajectoryIn(root, ".")
}

// OpenTrajectoryIn opens the trajectory of the episode folder dir inside root, as
// OpenTrajectory does, for a reader that must not be led out of root (the viewer serves
// folders someone else wrote): no link leaves it, and only a regular file is read, so a FIFO
// put in a trajectory's place cannot hang the reader. The file is streamed: a finished
// episode's is decompressed as it is read, never whole.
func OpenTrajectoryIn(root *os.Root, dir string) (io.ReadCloser, error) {
	f, err := safefile.Open(root, path.Join(dir, TrajectoryFile+".zst"))
	if errors.Is(err, os.ErrNotExist) {
		return safefile.Open(root, path.Join(dir, TrajectoryFile))
	}
	if err != nil {
		return nil, err
	}
	zr, err := zstd.NewReader(f, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
	if err != nil {
		f.Close()
		return nil, err
	}
	return zstdFile{zr, f}, nil
}

type zstdFile struct {
	*zstd.Decoder
	f *os.File
}

func (z zstdFile) Close() error {
	z.Decoder.Close()
	return z.f.Close()
}

// One encoder serves every episode, one at a time: an encoder holds several MB of window and
// tables, and a run at --parallel 32 would otherwise hold 32 of them as its episodes end.
var (
	encoderMu sync.Mutex
	encoder   = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithLowerEncoderMem(true))
	})
)

func compress(w io.Writer, r io.Reader) error {
	encoderMu.Lock()
	defer encoderMu.Unlock()
	zw, err := encoder()
	if err != nil {
		return err
	}
	zw.Reset(w)
	if _, err := io.Copy(zw, r); err != nil {
		zw.Close()
		return err
	}
	return zw.Close()
}

// CompressTrajectory replaces an episode folder's plain trajectory with its compressed form.
// On failure the plain file stays, and readers still find it.
func CompressTrajectory(dir string) error {
	plain := filepath.Join(dir, TrajectoryFile)
	in, err := os.Open(plain)
	if err != nil {
		return err
	}
	defer in.Close()
	tmp := plain + ".zst.tmp"
	out, err := os.Create(tmp)
	if err != nil {
		return err
	}
	err = compress(out, in)
	err = errors.Join(err, out.Close())
	if err == nil {
		err = os.Rename(tmp, plain+".zst")
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Remove(plain)
}

// TurnRecord is one model call as a trajectory keeps it (kind "turn"): the messages new since
// the previous call (tool results and harness messages; the prompts on the first), the reply
// and its usage. A replay plays these back.
type TurnRecord struct {
	Kind    string          `json:"kind"` // "turn"
	Turn    int             `json:"turn"`
	Summary bool            `json:"summary,omitempty"` // a summarisation call, not a turn
	At      time.Time       `json:"at"`
	Input   []model.Message `json:"input"`
	Reply   model.Message   `json:"reply"`
	Usage   model.Usage     `json:"usage"`
	Cut     bool            `json:"cut,omitempty"` // the reply stopped at the output cap (model.Reply.Cut)
	Error   string          `json:"error,omitempty"`
}

// ShellCommand is the command of a shell tool call: arguments `{"cmd": "..."}`, whatever the
// tool's name in the run's prompt set; ok is false for any other arguments.
func ShellCommand(arguments string) (cmd string, ok bool) {
	var args struct {
		Cmd *string `json:"cmd"`
	}
	if json.Unmarshal([]byte(arguments), &args) != nil || args.Cmd == nil {
		return "", false
	}
	return *args.Cmd, true
}

// NewMessages follows a conversation call by call and tells which messages each call adds, so
// a trajectory records every message once and a replay can compare like with like.
type NewMessages struct{ seen int }

// Next returns the messages of req not seen in earlier calls, then notes the call: a reply
// joins the conversation, a summary restarts it after the two prompts, a failed call adds
// nothing. After a history was shortened, everything after the prompts counts as new.
func (n *NewMessages) Next(req model.Request, failed bool) []model.Message {
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

// MaxTurnLine bounds one turn record: its new messages (tool results cut by the sandbox) and
// the reply. Wire events can be longer (a request carries the whole conversation); readers of
// turns skip them without holding them.
const MaxTurnLine = 64 << 20

// ReadTurns reads the turn records of the trajectory in an episode folder (OpenTrajectory),
// in order, skipping the wire events. A turn line that is not a record, or longer than
// MaxTurnLine, is an error naming the file and line; a last line a crash cut short is left
// out.
func ReadTurns(dir string) ([]TurnRecord, error) {
	f, err := OpenTrajectory(dir)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	path := filepath.Join(dir, TrajectoryFile)
	var turns []TurnRecord
	r := bufio.NewReaderSize(f, 64<<10)
	prefix := []byte(`{"kind":"turn"`)
	for line := 1; ; line++ {
		head, err := r.Peek(len(prefix))
		if errors.Is(err, io.EOF) && len(head) == 0 {
			return turns, nil
		}
		if !bytes.Equal(head, prefix) {
			if err := SkipTrajectoryLine(r); err != nil {
				return turns, nil // the end of the file
			}
			continue
		}
		b, whole, err := ReadTrajectoryLine(r, MaxTurnLine)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: a turn record %w", path, line, err)
		}
		if !whole {
			return turns, nil // cut short by a crash
		}
		var t TurnRecord
		if err := json.Unmarshal(b, &t); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, line, err)
		}
		turns = append(turns, t)
	}
}

// SkipTrajectoryLine reads past the next newline without keeping anything; io.EOF when there
// is none.
func SkipTrajectoryLine(r *bufio.Reader) error {
	for {
		_, err := r.ReadSlice('\n')
		if !errors.Is(err, bufio.ErrBufferFull) {
			return err
		}
	}
}

// ReadTrajectoryLine reads the next line without its newline; whole says a newline ended it
// (false: the file ends in a line cut short). A line longer than limit is skipped, and is an
// error.
func ReadTrajectoryLine(r *bufio.Reader, limit int) (line []byte, whole bool, err error) {
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit {
			if errors.Is(err, bufio.ErrBufferFull) { // the rest of the line is still to come
				err = SkipTrajectoryLine(r)
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, false, err
			}
			return nil, true, fmt.Errorf("longer than %d MiB", limit>>20)
		}
		line = append(line, chunk...)
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil:
			return line[:len(line)-1], true, nil
		case errors.Is(err, io.EOF):
			return line, false, nil
		default:
			return nil, false, err
		}
	}
}
