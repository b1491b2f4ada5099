package runfolder

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/filelock"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Folder is a run folder opened by the one process that writes it: locked from Open to Close,
// so two runs given the same folder never both play its episodes (twice the spend, and their
// lines interleaved).
type Folder struct {
	Dir string
	// Prev is the run the folder held when it was opened, nil for a new one: what a resume
	// starts from.
	Prev *Run

	lock    *os.File
	created bool       // Open made the folder
	mu      sync.Mutex // serialises appends and guards what follows
	results *os.File   // results.jsonl, opened by the first Append
	spend   *os.File   // spend.jsonl, opened by the first Charge
	header  bool       // a header was written
}

// Open opens dir to write a run into, creating it when it does not exist. It refuses a file
// and a folder that holds other files but no run.json (someone's own files, which a run would
// overwrite or append to) with ErrNotRunFolder; a folder another process is writing with
// ErrLocked, naming that process; a broken run.json with ErrCorrupt. A results.jsonl whose
// last line a crash cut short is repaired, so the next line appended starts a line of its own.
func Open(dir string) (*Folder, error) {
	exists, err := checkTarget(dir)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("create the run folder: %w", err)
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	f := &Folder{Dir: dir, lock: lock, created: !exists}
	prev, err := Read(dir)
	switch {
	case errors.Is(err, ErrNotRunFolder): // a new run
	case err != nil:
		_ = f.Close() // releases the lock; the error that ends the open is the one to tell
		return nil, err
	default:
		f.Prev = prev
		if err := repairLines(filepath.Join(dir, ResultsFile), isResult); err != nil {
			_ = f.Close() // as above
			return nil, err
		}
		if err := repairLines(filepath.Join(dir, SpendFile), isCharge); err != nil {
			_ = f.Close() // as above
			return nil, err
		}
	}
	return f, nil
}

// checkTarget refuses what a run must not write into: a file, or a folder holding files but no
// run.json. The lock file alone does not count: a run killed before writing run.json leaves
// only that. exists says whether dir exists.
func checkTarget(dir string) (exists bool, err error) {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("open the run folder: %w", err)
	case !info.IsDir():
		return true, fmt.Errorf("%s: %w: it is a file", dir, ErrNotRunFolder)
	}
	if _, err := os.Lstat(filepath.Join(dir, HeaderFile)); err == nil {
		return true, nil // Read says whether it is a header
	}
	if holdsEpisodes(dir) {
		return true, &HeaderError{Dir: dir, Err: errHeaderLost}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return true, fmt.Errorf("open the run folder: %w", err)
	}
	var others []string
	for _, e := range entries {
		if e.Name() != LockFile {
			others = append(others, e.Name())
		}
	}
	if len(others) == 0 {
		return true, nil
	}
	if len(others) > 3 {
		others = append(others[:3], "...")
	}
	return true, fmt.Errorf("%s: %w (no %s) and not empty (%s): give a new or empty folder", dir, ErrNotRunFolder,
		HeaderFile, strings.Join(others, ", "))
}

// holder is what the lock file says of the process that holds it, for the one refused.
type holder struct {
	PID     int       `json:"pid"`
	Host    string    `json:"host"`
	Started time.Time `json:"started"`
}

// lockDir takes the run folder's lock without waiting and writes who holds it. The system
// releases the lock when the process ends, however it ends, so a run killed with kill -9
// leaves no lock behind; the file stays, naming its last holder.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, LockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock the run folder: %w", err)
	}
	if err := filelock.TryLock(f); err != nil {
		defer func() { _ = f.Close() }() // only read: the holder's name
		if errors.Is(err, filelock.ErrLocked) {
			return nil, fmt.Errorf("%s: %w (%s)", dir, ErrLocked, describeHolder(f))
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !stillNamed(path, f) { // its holder removed it as it let go (see Close)
		filelock.Unlock(f)
		_ = f.Close() // nothing written to it
		return nil, fmt.Errorf("%s: %w (a run that failed to start was leaving it; try again)", dir, ErrLocked)
	}
	host, _ := os.Hostname() // "" says the host is unknown
	b, err := json.Marshal(holder{PID: os.Getpid(), Host: host, Started: time.Now().UTC()})
	// Written over the last holder's and then cut to length, so a full disk, which cannot
	// give the file a new block, can still be written.
	if err == nil {
		_, err = f.WriteAt(append(b, '\n'), 0)
	}
	if err == nil {
		err = f.Truncate(int64(len(b) + 1))
	}
	if err != nil {
		filelock.Unlock(f)
		_ = f.Close() // the failed write is the one to tell
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	return f, nil
}

// stillNamed reports whether path still names the open file f.
func stillNamed(path string, f *os.File) bool {
	named, err1 := os.Stat(path)
	open, err2 := f.Stat()
	return err1 == nil && err2 == nil && os.SameFile(named, open)
}

// describeHolder says who holds the lock of f, as the holder wrote it.
func describeHolder(f *os.File) string {
	b := make([]byte, 4096)
	n, _ := f.ReadAt(b, 0) // a short or failed read leaves the holder unknown
	h, ok := parseHolder(b[:n])
	if !ok {
		return "which one is unknown"
	}
	return fmt.Sprintf("pid %d on %s, started %s", h.PID, cmp.Or(h.Host, "an unknown host"),
		h.Started.Local().Format("2006-01-02 15:04:05 MST"))
}

func parseHolder(b []byte) (holder, bool) {
	var h holder
	if json.Unmarshal(bytes.TrimSpace(b), &h) != nil || h.PID == 0 {
		return holder{}, false
	}
	return h, true
}

// LockHolder says which process run.lock names: the one writing the folder now, or the last
// one that did. It is for readers that must not take the lock to find out (the viewer, which
// would make a run starting that moment refuse the folder); ok is false when the file names
// no one.
func LockHolder(dir string) (pid int, host string, ok bool) {
	b, err := safefile.ReadPath(filepath.Join(dir, LockFile), 4096)
	if err != nil {
		return 0, "", false
	}
	h, ok := parseHolder(b)
	return h.PID, h.Host, ok
}

// Close releases the folder: what was appended is already on disk. A new run that wrote no
// header (it failed before it began: the sandbox could not start) leaves nothing behind: its
// lock file goes, and the folder too when Open made it and it is empty.
func (f *Folder) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	var err error
	for _, file := range []**os.File{&f.results, &f.spend} {
		if *file != nil {
			err = errors.Join(err, (*file).Close())
			*file = nil
		}
	}
	if f.Prev == nil && !f.header {
		// Removed while still locked, so no one takes the lock of a file about to go;
		// best effort: what stays is a lock file or an empty folder, which a run accepts as new.
		_ = os.Remove(f.lock.Name())
		if f.created {
			_ = os.Remove(f.Dir) // fails, and leaves it, when something else is in it
		}
	}
	filelock.Unlock(f.lock)
	return errors.Join(err, f.lock.Close())
}

// WriteHeader writes run.json, replacing the old one whole: a failed write (a full disk)
// leaves the old header as it was.
func (f *Folder) WriteHeader(h Header) error {
	if err := writeJSON(filepath.Join(f.Dir, HeaderFile), h); err != nil {
		return err
	}
	f.mu.Lock()
	f.header = true
	f.mu.Unlock()
	return nil
}

// RecordRateLimits adds to run.json, once the run is over (or interrupted), the model's rate
// limits as the run's limiter knew them at its end and what its calls met.
func (f *Folder) RecordRateLimits(s ratelimit.Status) error {
	h, err := ReadHeader(f.Dir)
	if err != nil {
		return fmt.Errorf("record the rate limits: %w", err)
	}
	h.RateLimits = &s
	return f.WriteHeader(h)
}

// WritePrompts writes the prompt set the run uses, formatted, as PromptsFile, replacing the
// old one whole.
func (f *Folder) WritePrompts(b []byte) error {
	path := filepath.Join(f.Dir, PromptsFile)
	if err := atomicfile.WriteFile(path, b); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// WriteSummary writes summary.json, replacing the old one whole: the score, and what the run
// spent in all (null when the folder has no ledger).
func (f *Folder) WriteSummary(s grader.Summary, spent *Spend) error {
	return writeJSON(filepath.Join(f.Dir, SummaryFile), struct {
		grader.Summary
		Spent *Spend `json:"spent"`
	}{s, spent})
}

// writeJSON writes one of the run folder's JSON files atomically, indented for people to read.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err == nil {
		err = atomicfile.WriteFile(path, append(b, '\n'))
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// NewEpisode creates the folder of an episode's files and returns its path.
func (f *Folder) NewEpisode(e Episode) (string, error) {
	dir := EpisodeDir(f.Dir, e)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the episode folder: %w", err)
	}
	return dir, nil
}

// Append records results in results.jsonl, a line each, and syncs them to disk before it
// returns, so a recorded episode survives a crash. When the write or the sync fails (a full
// disk) the file is cut back to where it ended, so it holds only whole lines.
func (f *Folder) Append(results ...Result) error {
	var buf []byte
	for _, r := range results {
		line, err := json.Marshal(r)
		if err != nil {
			return fmt.Errorf("encode the result of %s repeat %d: %w", r.Task, r.Repeat, err)
		}
		buf = append(append(buf, line...), '\n')
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return appendSynced(&f.results, filepath.Join(f.Dir, ResultsFile), buf)
}

// appendSynced appends buf to the file at path, opening it into *file the first time, and syncs
// it; when the write or the sync fails (a full disk) the file is cut back to where it ended, so
// it holds only whole lines. f.mu is held.
func appendSynced(file **os.File, path string, buf []byte) error {
	if *file == nil {
		opened, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err // an os error names the file and what failed
		}
		*file = opened
	}
	w := *file
	end, err := w.Seek(0, io.SeekEnd)
	if err != nil {
		return err
	}
	if _, err = w.Write(buf); err == nil {
		err = w.Sync()
	}
	if err != nil {
		return errors.Join(err, w.Truncate(end))
	}
	return nil
}

// repairLines makes one of the run folder's JSON Lines files (results.jsonl, spend.jsonl) end
// with a whole line before anything is appended to it: a last line a crash cut short is
// dropped, a last line that is whole (valid says so) but lacks its newline (a file edited by
// hand) gets one.
func repairLines(path string, valid func([]byte) bool) error {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (len(b) == 0 || b[len(b)-1] == '\n')) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	start := bytes.LastIndexByte(b, '\n') + 1
	if valid(b[start:]) {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
		if err == nil {
			_, err = f.Write([]byte{'\n'})
			err = errors.Join(err, f.Close())
		}
		if err != nil {
			return fmt.Errorf("end the last line of %s: %w", path, err)
		}
		return nil
	}
	if err := os.Truncate(path, int64(start)); err != nil {
		return fmt.Errorf("drop the cut last line of %s: %w", path, err)
	}
	return nil
}
