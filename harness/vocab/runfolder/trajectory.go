package runfolder

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// TrajectoryFile is an episode's record, written as the episode goes. When the episode ends it
// is compressed to TrajectoryFile + ".zst": every request carries the whole conversation, so
// the plain file grows with the square of the turns (tens of MB for a long episode) while the
// compressed one stays near the size of the conversation itself (60x smaller, measured).
const TrajectoryFile = "trajectory.jsonl"

// TurnRecord is one model call as a trajectory keeps it (kind model.KindTurn): the messages
// new since the previous call (tool results and harness messages; the prompts on the first),
// the reply and its usage. A replay plays these back.
type TurnRecord struct {
	Kind    model.EventKind `json:"kind"` // model.KindTurn
	Turn    int             `json:"turn"`
	Summary bool            `json:"summary,omitempty"` // a summarisation call, not a turn
	At      time.Time       `json:"at"`
	Input   []model.Message `json:"input"`
	Reply   model.Message   `json:"reply"`
	Usage   model.Usage     `json:"usage"`
	Cut     bool            `json:"cut,omitempty"` // the reply stopped at the output cap (model.Reply.Cut)
	Error   string          `json:"error,omitempty"`
	// InputBytes and InputSHA256, when set, say Input was left out, the trajectory being past
	// MaxTrajectoryBytes: the length of the messages as JSON, and their sha256 in hex.
	InputBytes  int64  `json:"input_bytes,omitempty"`
	InputSHA256 string `json:"input_sha256,omitempty"`
}

// UnsentRecord is the messages an episode ended with that no model call sent (kind
// model.KindUnsent), the last line of its trajectory: the results of the tool calls of its last
// turn, which no turn's input holds since no call followed them.
type UnsentRecord struct {
	Kind     model.EventKind `json:"kind"` // model.KindUnsent
	Turn     int             `json:"turn"` // the turn whose calls they answer
	At       time.Time       `json:"at"`
	Messages []model.Message `json:"messages"`
}

// AgentRecord is how the agent of an agent run ended (kind model.KindAgent), the last line of
// its trajectory: what ran, its exit status, and what it printed, cut as a command's output is.
type AgentRecord struct {
	Kind        model.EventKind `json:"kind"` // model.KindAgent
	At          time.Time       `json:"at"`
	Agent       string          `json:"agent"` // as --agent named it
	ExitCode    int             `json:"exit_code"`
	TimedOut    bool            `json:"timed_out,omitempty"`
	Duration    float64         `json:"duration_s"`
	Stdout      string          `json:"stdout"`
	Stderr      string          `json:"stderr"`
	StdoutChars int64           `json:"stdout_chars"` // characters printed in all
	StderrChars int64           `json:"stderr_chars"`
	Error       string          `json:"error,omitempty"` // the agent could not be run or waited for
}

// NewMessages follows the conversations of an episode's calls and tells which messages each
// call adds, so a trajectory records every message once and a replay can compare like with
// like. The loop's calls make one conversation. An agent's may make several: a CLI's side
// calls (a title, a summary) are conversations of their own, between the calls of its
// investigation, and each is followed on its own.
type NewMessages struct{ threads []thread }

// thread is one conversation: what its last call sent, and how much of it was recorded.
type thread struct {
	sent    [sha256.Size]byte // the hash of the messages of its last call (its prompts, after a summary)
	n       int               // how many they are
	prompts [sha256.Size]byte // the hash of its first two messages (fewer when it had fewer)
	seen    int               // its messages recorded so far, the last call's reply included
}

// Next returns the messages of req not seen in earlier calls, then notes the call: a reply
// joins the conversation, a summary restarts it after the two prompts, a failed call adds
// nothing. A call goes on the conversation whose last call's messages it begins with; after a
// history was shortened (the same prompts, then other messages), everything after the
// prompts counts as new; a call that begins no conversation (other prompts) begins one of its
// own, every message of it new.
func (n *NewMessages) Next(req model.Request, failed bool) []model.Message {
	msgs := req.Messages
	chain := prefixHashes(msgs)
	prompts := min(2, len(msgs))
	t, seen := n.follow(chain)
	if t == nil { // a history shortened, or another conversation
		for i := range n.threads {
			if n.threads[i].prompts == chain[prompts] {
				t, seen = &n.threads[i], prompts
				break
			}
		}
	}
	if t == nil {
		n.threads = append(n.threads, thread{prompts: chain[prompts]})
		t, seen = &n.threads[len(n.threads)-1], 0
	}
	switch {
	case req.Summary:
		t.n, t.seen = prompts, 2
	case failed:
		t.n, t.seen = len(msgs), len(msgs)
	default:
		t.n, t.seen = len(msgs), len(msgs)+1
	}
	t.sent = chain[t.n]
	return msgs[seen:]
}

// follow is the conversation whose last call's messages msgs (chain their prefixes' hashes)
// begin with, the longest, and how many of msgs it recorded; nil none.
func (n *NewMessages) follow(chain [][sha256.Size]byte) (*thread, int) {
	var best *thread
	for i := range n.threads {
		t := &n.threads[i]
		if t.n < len(chain) && chain[t.n] == t.sent && (best == nil || t.n > best.n) {
			best = t
		}
	}
	if best == nil {
		return nil, 0
	}
	return best, min(best.seen, len(chain)-1)
}

// prefixHashes are the hashes of msgs[:k], k from 0 to len(msgs), each the previous one's
// chained with a message. A message counts by what a conversation shows of it, what a
// provider keeps for itself (Opaque) aside: an agent may send it back differently.
func prefixHashes(msgs []model.Message) [][sha256.Size]byte {
	chain := make([][sha256.Size]byte, len(msgs)+1)
	for i, m := range msgs {
		m.Opaque = nil
		b, _ := json.Marshal(m) // strings, booleans and raw JSON left out
		chain[i+1] = sha256.Sum256(append(chain[i][:], b...))
	}
	return chain
}

// ErrNotRecorded marks an episode whose trajectory could not be written (a full disk): the
// run stops, as when a result cannot be recorded, rather than spend calls it cannot keep.
var ErrNotRecorded = errors.New("the trajectory could not be written")

// Trajectory writes one episode's trajectory: turn records with the events of each call
// (request, response, retry, ...) before them, in order. An episode's calls are sequential,
// so it needs no lock. The first failed write is kept, no line is written after it (a line cut
// by a full disk stays the last), and failed is called.
type Trajectory struct {
	f       *os.File
	out     countingWriter
	enc     *json.Encoder
	new     NewMessages
	retries int
	err     error
	failed  func(error)
}

// NewTrajectory creates the trajectory of the episode e, whose folder NewEpisode made, in
// place of an earlier attempt's; failed is called on the first write that fails.
func (f *Folder) NewTrajectory(e Episode, failed func(error)) (*Trajectory, error) {
	dir := EpisodeDir(f.Dir, e)
	// An earlier attempt's: left there, readers would take it for this one's.
	if err := os.Remove(filepath.Join(dir, TrajectoryFile+".zst")); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the earlier attempt's trajectory: %w", err)
	}
	file, err := os.Create(filepath.Join(dir, TrajectoryFile))
	if err != nil {
		return nil, err // an os error names the file and what failed
	}
	return newTrajectory(file, failed), nil
}

func newTrajectory(f *os.File, failed func(error)) *Trajectory {
	t := &Trajectory{f: f, out: countingWriter{w: f}, failed: failed}
	t.enc = json.NewEncoder(&t.out)
	return t
}

// MaxTrajectoryBytes bounds an episode's trajectory, whatever its calls hold: once a body
// would take the file past it, the body is recorded as its beginning, its length and its
// sha256 (model.Event.CutBody, cutBodyBytes of it), and a turn's input messages as their
// length and sha256, so that every line stays well-formed and the file stays near the bound
// (the lines of fixed size that follow add little). A long episode of the reference loop
// writes tens of MiB; 256 MiB leaves it whole.
const MaxTrajectoryBytes = 256 << 20

// cutBodyBytes is what a body past the bound keeps of its beginning.
const cutBodyBytes = 4 << 10

// pastBound reports whether n bytes more would take the trajectory past MaxTrajectoryBytes,
// for a piece worth cutting (longer than what a cut keeps).
func (t *Trajectory) pastBound(n int) bool {
	return n > cutBodyBytes && t.out.n+int64(n) > MaxTrajectoryBytes
}

// countingWriter counts the bytes written through it.
type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}

func (t *Trajectory) write(v any) {
	if t.err != nil {
		return
	}
	if err := t.enc.Encode(v); err != nil {
		t.err = fmt.Errorf("%w: %w", ErrNotRecorded, err)
		t.failed(t.err)
	}
}

// Event records an event of a model call, as it comes.
func (t *Trajectory) Event(e model.Event) {
	if e.Kind == model.KindRetry {
		t.retries++
	}
	if e.BodyBytes == 0 && t.pastBound(len(e.Body)) {
		e.CutBody(e.Body, cutBodyBytes)
	}
	t.write(e)
}

// Turn records the model call n (req answered by reply, or failed with err) after its events:
// only the messages of req new since the previous call.
func (t *Trajectory) Turn(n int, req model.Request, reply model.Reply, err error) {
	entry := TurnRecord{Kind: model.KindTurn, Turn: n, Summary: req.Summary, At: time.Now().UTC(),
		Input: t.new.Next(req, err != nil), Reply: reply.Message, Usage: reply.Usage, Cut: reply.Cut}
	if err != nil {
		entry.Error = err.Error()
	}
	if input, _ := json.Marshal(entry.Input); t.pastBound(len(input)) { // messages, which marshal
		sum := sha256.Sum256(input)
		entry.Input, entry.InputBytes, entry.InputSHA256 = nil, int64(len(input)), hex.EncodeToString(sum[:])
	}
	t.write(entry)
}

// Agent records how the episode's agent ended.
func (t *Trajectory) Agent(r AgentRecord) {
	r.Kind = model.KindAgent
	if r.At.IsZero() {
		r.At = time.Now().UTC()
	}
	t.write(r)
}

// Unsent records the messages the episode ended with that no call sent, the results of the
// tool calls of turn n; nothing when there are none.
func (t *Trajectory) Unsent(n int, messages []model.Message) {
	if len(messages) > 0 {
		t.write(UnsentRecord{Kind: model.KindUnsent, Turn: n, At: time.Now().UTC(), Messages: messages})
	}
}

// Retries counts the calls retried so far.
func (t *Trajectory) Retries() int { return t.retries }

// Close closes the file and returns the first failure to write it, if any.
func (t *Trajectory) Close() error {
	if err := t.f.Close(); err != nil && t.err == nil {
		t.err = fmt.Errorf("%w: %w", ErrNotRecorded, err)
	}
	return t.err
}

// WriteSubmission keeps the submission of the episode e, as the model wrote it, in the
// episode's folder (grader.SubmissionFile).
func (f *Folder) WriteSubmission(e Episode, b []byte) error {
	return os.WriteFile(filepath.Join(EpisodeDir(f.Dir, e), grader.SubmissionFile), b, 0o644)
}

// OpenTrajectory opens the trajectory in an episode folder: the compressed file of a finished
// episode, else the plain one of an episode still running or cut short.
func OpenTrajectory(dir string) (io.ReadCloser, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // the file opened in it stays open
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
		_ = f.Close() // read only
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
		_ = zw.Close() // the copy's error is the one to tell; the output is removed
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
	tmp := plain + ".zst.tmp"
	out, err := os.Create(tmp)
	if err != nil {
		_ = in.Close() // only read
		return err
	}
	err = compress(out, in)
	// Closed before the removal below: Windows removes no file that is open.
	err = errors.Join(err, out.Close(), in.Close())
	if err == nil {
		err = os.Rename(tmp, plain+".zst")
	}
	if err != nil {
		_ = os.Remove(tmp) // the failure above is the one to tell; the plain file stays
		return err
	}
	return os.Remove(plain)
}
