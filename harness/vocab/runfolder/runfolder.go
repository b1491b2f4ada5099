// Package runfolder owns the layout of a run folder (docs/run-folder.md): its file
// names, the header (run.json), the results (results.jsonl) and their summary, the shards a
// run's episodes are dealt into, and the episode folders with their record (the trajectory,
// whose one writer and one reader are here, and the submission). It is
// the one reader of run folders, so that run, grade, report, merge and replay agree on what a
// folder holds and say the same thing about a broken one, and the one writer, so that every
// write is checked, results are synced line by line, JSON files are replaced atomically and
// only one process at a time writes into a folder (Open takes a lock for the whole run).
package runfolder

import (
	"errors"
	"path/filepath"
	"strconv"
)

// The files and folders of a run folder. Reports (results.parquet, report.md, report.html)
// are harness/readers/report's; an episode's trajectory is TrajectoryFile and its submission
// grader.SubmissionFile.
const (
	HeaderFile  = "run.json"      // the header: what ran, and how
	ResultsFile = "results.jsonl" // one line per finished episode, appended and synced
	SummaryFile = "summary.json"  // the summary, in the schema of grade --json
	EpisodesDir = "episodes"      // episodes/TASK/REPEAT/ holds each episode's files
	LockFile    = "run.lock"      // locked by the process writing the folder; names it
	// PromptsFile is the prompt set the run used, as promptset.Set.Format writes it, so its
	// sha256 is the header's prompt_sha256 and the set can be read back (ReadPrompts):
	// by the viewer and the analysis, to take its tool results apart, and by a replay, to send
	// the same texts.
	PromptsFile = "prompts.txt"
	// JudgeDir holds the LLM judge's answers of a run graded by one (grader/judge's cache:
	// one file per question, keyed by the judge, its prompt, the ground truth and the
	// entities), so grade can score the run again without asking the judge again.
	JudgeDir = "judge"
)

var (
	// ErrNotRunFolder marks a path that holds no run: it does not exist, is a file, or has no
	// run.json.
	ErrNotRunFolder = errors.New("not a run folder")
	// ErrCorrupt marks a run folder whose run.json cannot be read as a run header.
	ErrCorrupt = errors.New("corrupt run folder")
	// ErrLocked marks a run folder another process is writing.
	ErrLocked = errors.New("in use by another aa-grade process")
)

// Episode names one task x repeat.
type Episode struct {
	Task   string
	Repeat int
}

// EpisodeDir is the folder of an episode's files in the run folder dir.
func EpisodeDir(dir string, e Episode) string {
	return filepath.Join(dir, EpisodesDir, e.Task, strconv.Itoa(e.Repeat))
}
