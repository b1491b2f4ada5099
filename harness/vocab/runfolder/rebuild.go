package runfolder

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Rebuilt is what a run folder that lost its run.json still says of its run, read back from
// results.jsonl, the episode folders, the trajectories and the prompt set's copy: enough for a
// header that report, view, grade, export, analyze and merge read.
type Rebuilt struct {
	Tasks   []string // in the order of their numbers (Scenario-2 before Scenario-10)
	Repeats int      // the highest repeat found
	// PromptSHA256 is the sha256 of PromptsFile, "" when the folder has none.
	PromptSHA256 string
	// Started is the time of the earliest model call recorded, zero when none is.
	Started time.Time
	// URL and Model are the first request recorded to a provider: where, and the model its
	// body names ("" when it names none, as Gemini's, whose model is in the URL). Both "" when
	// no trajectory holds a request (builtin/baseline and replays call no provider).
	URL, Model string
	// Agent says an agent played the episodes (run --agent): a trajectory ends in an agent line.
	Agent    bool
	Warnings []string // results.jsonl lines and trajectories that could not be read
}

// Rebuild reads back what the run folder dir holds of its run. It reads only: WriteRebuilt
// writes the header made of it. ErrNotRunFolder when dir holds no results and no episodes.
func Rebuild(dir string) (Rebuilt, error) {
	if !holdsEpisodes(dir) {
		return Rebuilt{}, fmt.Errorf("%s: %w (no %s and no %s/)", dir, ErrNotRunFolder, ResultsFile, EpisodesDir)
	}
	results, warnings, err := readResults(dir)
	if err != nil {
		return Rebuilt{}, err
	}
	rb := Rebuilt{Warnings: warnings}
	episodes, err := episodeFolders(dir)
	if err != nil {
		return Rebuilt{}, err
	}
	seen := map[string]bool{}
	add := func(e Episode) {
		if !seen[e.Task] {
			seen[e.Task] = true
			rb.Tasks = append(rb.Tasks, e.Task)
		}
		rb.Repeats = max(rb.Repeats, e.Repeat)
	}
	for e := range results {
		add(e)
	}
	for _, e := range episodes {
		add(e)
		rb.readTrajectory(EpisodeDir(dir, e))
	}
	slices.SortFunc(rb.Tasks, byNumber)
	switch b, err := safefile.ReadPath(filepath.Join(dir, PromptsFile), maxPromptsFile); {
	case err == nil:
		sum := sha256.Sum256(b)
		rb.PromptSHA256 = hex.EncodeToString(sum[:])
	case !errors.Is(err, fs.ErrNotExist):
		return Rebuilt{}, fmt.Errorf("read the run's prompt set: %w", err)
	}
	return rb, nil
}

// episodeFolders lists the folders episodes/TASK/REPEAT of dir, in task then repeat order.
func episodeFolders(dir string) ([]Episode, error) {
	tasks, err := os.ReadDir(filepath.Join(dir, EpisodesDir))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read the episode folders: %w", err)
	}
	var out []Episode
	for _, t := range tasks {
		repeats, err := os.ReadDir(filepath.Join(dir, EpisodesDir, t.Name()))
		if err != nil || !t.IsDir() {
			continue // a stray file: no episode of the run
		}
		for _, r := range repeats {
			if n, err := strconv.Atoi(r.Name()); err == nil && n > 0 && r.IsDir() {
				out = append(out, Episode{t.Name(), n})
			}
		}
	}
	return out, nil
}

// byNumber orders task ids by what comes before their trailing number, then by the number.
func byNumber(a, b string) int {
	split := func(s string) (string, int) {
		i := len(s)
		for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
			i--
		}
		n, _ := strconv.Atoi(s[i:]) // digits only; "" is 0
		return s[:i], n
	}
	pa, na := split(a)
	pb, nb := split(b)
	return cmp.Or(strings.Compare(pa, pb), cmp.Compare(na, nb), strings.Compare(a, b))
}

// readTrajectory takes from the trajectory in the episode folder dir its first request (when
// none was found before), the time of its first turn and whether an agent played it.
func (rb *Rebuilt) readTrajectory(dir string) {
	f, err := OpenTrajectory(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return // an episode that never started, or whose trajectory is lost
	}
	if err != nil {
		rb.Warnings = append(rb.Warnings, fmt.Sprintf("%s: %v", dir, err))
		return
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	want := func(k model.EventKind) bool {
		return k == model.KindTurn || k == model.KindAgent || (k == model.KindRequest && rb.URL == "")
	}
	turned := false
	for line := range NewTrajectoryReader(f, want).Lines() {
		if line.Err != nil || !line.Whole {
			continue
		}
		switch line.Kind {
		case model.KindAgent:
			rb.Agent = true
		case model.KindRequest:
			rb.takeRequest(line)
		case model.KindTurn:
			if t, err := line.Turn(); err == nil && !turned && (rb.Started.IsZero() || t.At.Before(rb.Started)) {
				rb.Started = t.At
			}
			turned = true
		}
	}
}

// takeRequest keeps the URL of a request line and the model its body names.
func (rb *Rebuilt) takeRequest(line TrajectoryLine) {
	e, err := line.Event()
	if err != nil || e.URL == "" {
		return
	}
	rb.URL = e.URL
	var body struct {
		Model string `json:"model"`
	}
	if json.Unmarshal(e.Body, &body) == nil { // a body cut short is a JSON string: no model
		rb.Model = body.Model
	}
}

// brokenSuffix names the copy WriteRebuilt keeps of a run.json it replaces.
const brokenSuffix = ".broken"

// WriteRebuilt writes h as the run folder dir's run.json, holding the folder's lock so that no
// run writes it meanwhile. A run.json already there (one that does not read) is kept beside,
// as run.json.broken, and its path returned; nothing is lost.
func WriteRebuilt(dir string, h Header) (kept string, err error) {
	lock, err := lockDir(dir)
	if err != nil {
		return "", err
	}
	defer func() { _ = lock.Close() }() // closing the lock file releases the lock
	path := filepath.Join(dir, HeaderFile)
	if _, err := os.Lstat(path); err == nil {
		kept = path + brokenSuffix
		if _, err := os.Lstat(kept); err == nil {
			return "", fmt.Errorf("keep the broken %s: %s is there already; move it away first", path, kept)
		}
		if err := os.Rename(path, kept); err != nil {
			return "", fmt.Errorf("keep the broken %s: %w", path, err)
		}
	}
	return kept, writeJSON(path, h)
}
