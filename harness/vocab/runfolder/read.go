package runfolder

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/grader"
)

// Run is a run folder as read: what ran, and the episodes that finished.
type Run struct {
	Dir    string
	Header Header
	// Results holds the last line of results.jsonl of each episode.
	Results map[Episode]Result
	// Warnings name the lines of results.jsonl and spend.jsonl that were skipped, file and
	// line number.
	Warnings []string
	// Spend is what the run spent in all (the sum of spend.jsonl); nil for a folder written
	// before the ledger was kept.
	Spend *Spend
}

// Read reads the run folder dir: ErrNotRunFolder when it holds no run, ErrCorrupt when its
// run.json is not a header (see ReadHeader and readResults for what else is tolerated).
func Read(dir string) (*Run, error) {
	h, err := ReadHeader(dir)
	if err != nil {
		return nil, err
	}
	results, warnings, err := readResults(dir)
	if err != nil {
		return nil, err
	}
	spend, spendWarnings, err := readSpend(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Header: h, Results: results, Warnings: append(warnings, spendWarnings...), Spend: spend}, nil
}

// Pending splits the episodes of a plan into those still to play and the final results done
// holds of the others (a resume keeps those, and plays the rest again).
func Pending(plan []Episode, done map[Episode]Result) (todo []Episode, finished []Result) {
	for _, e := range plan {
		if r, ok := done[e]; ok && r.Final() {
			finished = append(finished, r)
		} else {
			todo = append(todo, e)
		}
	}
	return todo, finished
}

// Submissions lists the submissions of the run's episodes (grader.FindSubmissions over its
// episodes folder). A run whose episodes all failed early has no episodes folder: it has no
// submissions, and a reader does not create the folder.
func (r *Run) Submissions() (grader.SubmissionFiles, []grader.Problem, error) {
	dir := filepath.Join(r.Dir, EpisodesDir)
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return grader.SubmissionFiles{}, nil, nil
	}
	return grader.FindSubmissions(dir)
}

// KeepStatuses gives the graded episodes of the run that left no submission the status the
// run recorded (max_turns, no_submission, error, ...) instead of missing.
func (r *Run) KeepStatuses(results []grader.TaskResult) {
	for _, t := range results {
		for i, e := range t.Episodes {
			if res, ok := r.Results[Episode{Task: t.Task, Repeat: e.Repeat}]; ok && e.Status == grader.StatusMissing &&
				res.Status != grader.StatusOK {
				t.Episodes[i].Status, t.Episodes[i].Reason = res.Status, res.Error
			}
		}
	}
}
