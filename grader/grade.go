package grader

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"github.com/aa-grade/aa-grade/internal/safefile"
	"github.com/aa-grade/aa-grade/internal/workpool"
)

// Task is what grading needs of a dataset task.
type Task struct {
	ID          string
	AltIDs      []string // other names a submission folder may use (the index's id_aa)
	GroundTruth []byte
}

// Problem is something a user should know about a grading run: an error (a task that could not
// be graded) or a warning (a file that was ignored).
type Problem struct {
	Level   string `json:"level"` // error or warning
	Task    string `json:"task,omitempty"`
	Message string `json:"message"`
	// Ignored is the file or folder, relative to the submissions folder, that a warning says
	// was not read as a submission.
	Ignored string `json:"ignored,omitempty"`
}

// SubmissionFile is the file an agent writes its diagnosis to, as the reference harness has it:
// a repeat's folder of submissions holds one.
const SubmissionFile = "agent_output.json"

// MaxRepeats is the largest repeat number graded. Without --repeats, grade scores as many
// repeats as the largest number found, so one stray file (Scenario-905/1000000.json) would
// otherwise make it score a million repeats of every task; real runs have a handful.
const MaxRepeats = 1000

// SubmissionFiles maps a task folder name to its repeats and their files.
type SubmissionFiles map[string]map[int]string

// SubmissionLayouts names the layouts of a folder of submissions FindSubmissions reads.
const SubmissionLayouts = "<task>/<repeat>.json or <task>/<repeat>/agent_output.json, repeat 1, 2, ... " +
	"(Scenario-2/1.json)"

// FindSubmissions lists the submissions of a folder laid out `<task>/<repeat>.json` or
// `<task>/<repeat>/agent_output.json`, repeats numbered from 1 to MaxRepeats. Anything else is
// reported and ignored.
func FindSubmissions(dir string) (SubmissionFiles, []Problem, error) {
	taskDirs, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read submissions folder: %w", err)
	}
	files := SubmissionFiles{}
	var problems []Problem
	for _, td := range taskDirs {
		if strings.HasPrefix(td.Name(), ".") {
			continue
		}
		if !td.IsDir() {
			problems = append(problems, Problem{Level: "warning", Ignored: td.Name(),
				Message: fmt.Sprintf("ignored %s: a file beside the task folders; expected %s", td.Name(), SubmissionLayouts)})
			continue
		}
		task := td.Name()
		entries, err := os.ReadDir(filepath.Join(dir, task))
		if err != nil {
			return nil, nil, fmt.Errorf("read submissions of %s: %w", task, err)
		}
		for _, e := range entries {
			name := e.Name()
			stem, file := strings.TrimSuffix(name, ".json"), filepath.Join(dir, task, name)
			if e.IsDir() {
				stem, file = name, filepath.Join(file, SubmissionFile)
			} else if stem == name {
				stem = "" // not a .json file
			}
			repeat, err := strconv.Atoi(stem)
			if err != nil || repeat < 1 {
				problems = append(problems, Problem{Level: "warning", Task: task, Ignored: filepath.Join(task, name),
					Message: fmt.Sprintf("ignored %s: expected %s", filepath.Join(task, name), SubmissionLayouts)})
				continue
			}
			if repeat > MaxRepeats {
				problems = append(problems, Problem{Level: "warning", Task: task, Ignored: filepath.Join(task, name),
					Message: fmt.Sprintf("ignored %s: repeat %d is above %d, the most that is graded", filepath.Join(task, name),
						repeat, MaxRepeats)})
				continue
			}
			if e.IsDir() {
				if _, err := os.Stat(file); errors.Is(err, fs.ErrNotExist) {
					continue // a repeat folder without a submission: the repeat is missing
				}
			}
			if files[task] == nil {
				files[task] = map[int]string{}
			}
			if prev, dup := files[task][repeat]; dup {
				problems = append(problems, Problem{Level: "warning", Task: task,
					Message: fmt.Sprintf("repeat %d has two submissions; graded %s, ignored %s", repeat, prev, file)})
				continue
			}
			files[task][repeat] = file
		}
	}
	return files, problems, nil
}

// maxRepeat is the largest repeat number among the submissions of the given tasks.
func (s SubmissionFiles) maxRepeat(tasks []Task) int {
	k := 0
	for _, t := range tasks {
		for r := range s.of(t) {
			k = max(k, r)
		}
	}
	return k
}

// of returns the submissions of a task under its id or one of its other ids.
func (s SubmissionFiles) of(t Task) map[int]string {
	if m, ok := s[t.ID]; ok {
		return m
	}
	for _, id := range t.AltIDs {
		if m, ok := s[id]; ok {
			return m
		}
	}
	return nil
}

// Covers reports whether any submission is for the task t (by its id or another of its ids).
func (s SubmissionFiles) Covers(t Task) bool { return len(s.of(t)) > 0 }

// GradeOptions say how submissions are graded.
type GradeOptions struct {
	// Repeats per task; <= 0: up to the largest repeat submitted for a task of the list, at
	// least 1.
	Repeats int
	// Scorer maps entities to groups and scores them; nil: the rules.
	Scorer Scorer
	// Parallel is how many submissions are scored at once (a judge's calls); <= 1: one.
	Parallel int
}

// GradeSubmissions scores repeats 1..opts.Repeats of every task. A repeat with no file scores
// 0 as `missing`, one that is no diagnosis (ErrInvalidSubmission) 0 as `invalid`. A task whose
// ground truth cannot be read is reported and left out; the others still grade. What a ground
// truth warns of is reported once per task. Submissions for tasks not in the list, and repeats
// beyond the count, are reported. The error is the context's (grading was interrupted), or
// that of a submission file the grader could not read (permissions, a disk error): that is
// the grader's failure, not the agent's, so it is no score.
func GradeSubmissions(
	ctx context.Context,
	tasks []Task,
	subs SubmissionFiles,
	opts GradeOptions,
) ([]TaskResult, []Problem, error) {
	repeats := opts.Repeats
	if repeats <= 0 {
		repeats = max(1, subs.maxRepeat(tasks))
	}
	var results []TaskResult
	var problems []Problem
	var jobs []scoreJob
	known := map[string]bool{}
	for _, t := range tasks {
		known[t.ID] = true
		for _, id := range t.AltIDs {
			known[id] = true
		}
		gt, err := ParseGroundTruth(t.GroundTruth)
		if err != nil {
			problems = append(problems,
				Problem{Level: "error", Task: t.ID, Message: fmt.Sprintf("ground truth of %s: %v", t.ID, err)})
			continue
		}
		problems = append(problems, groundTruthWarnings(t, gt)...)
		files := subs.of(t)
		result := TaskResult{Task: t.ID}
		for r := 1; r <= repeats; r++ {
			ep, names, err := readEpisode(gt, r, files[r])
			if err != nil {
				return nil, nil, err
			}
			if ep.Status == StatusOK {
				jobs = append(jobs, scoreJob{task: t, gt: gt, names: names, result: len(results), episode: r - 1})
			}
			result.Episodes = append(result.Episodes, ep)
		}
		for _, r := range sortedRepeats(files) {
			if r > repeats {
				problems = append(problems, Problem{Level: "warning", Task: t.ID,
					Message: fmt.Sprintf("ignored repeat %d of %s: the repeats past %d are not graded", r, t.ID, repeats)})
			}
		}
		results = append(results, result)
	}
	if err := scoreAll(ctx, jobs, results, opts); err != nil {
		return nil, nil, err
	}
	var unknown []string
	for task := range subs {
		if !known[task] {
			unknown = append(unknown, task)
		}
	}
	sort.Strings(unknown)
	for _, task := range unknown {
		problems = append(problems, Problem{Level: "warning", Task: task,
			Message: fmt.Sprintf("submissions for %s ignored: the dataset has no such task", task)})
	}
	return results, problems, nil
}

// groundTruthWarnings turns what the ground truth of a task warns of (a filter read as a
// glob, rule 6) into one warning for the task, whatever its number of repeats, so that a
// user knows a score rests on a guess about what the filter meant.
func groundTruthWarnings(t Task, gt *GroundTruth) []Problem {
	if len(gt.Warnings) == 0 {
		return nil
	}
	return []Problem{{Level: "warning", Task: t.ID,
		Message: fmt.Sprintf("ground truth of %s: %s", t.ID, strings.Join(gt.Warnings, "; "))}}
}

// scoreJob is one readable submission waiting for its verdict, and where the verdict goes.
type scoreJob struct {
	task            Task
	gt              *GroundTruth
	names           []string
	result, episode int
}

// scoreAll gives every job its verdict, opts.Parallel at once.
func scoreAll(ctx context.Context, jobs []scoreJob, results []TaskResult, opts GradeOptions) error {
	scorer := opts.Scorer
	if scorer == nil {
		scorer = Rules
	}
	var mu sync.Mutex
	var firstErr error
	workpool.Run(ctx, opts.Parallel, jobs, func(j scoreJob) {
		v, err := scorer(ctx, j.task, j.gt, j.names)
		if err != nil {
			mu.Lock()
			firstErr = cmp.Or(firstErr, err)
			mu.Unlock()
			return
		}
		results[j.result].Episodes[j.episode].Verdict = v
	})
	return cmp.Or(firstErr, ctx.Err())
}

func sortedRepeats(files map[int]string) []int {
	var rs []int
	for r := range files {
		rs = append(rs, r)
	}
	sort.Ints(rs)
	return rs
}

// readEpisode reads one submission file ("" when there is none): an episode `missing` or
// `invalid` (scored 0), or `ok` with the names it submits, to score. A file the grader may not
// read, or a disk that fails under it, is an error: no fault of the agent's. What an agent can
// do to its own output (a link out of its folder or to nothing, a FIFO) stays `invalid`.
func readEpisode(gt *GroundTruth, repeat int, file string) (Episode, []string, error) {
	ep := Episode{Repeat: repeat,
		Verdict: Verdict{EpisodeScore: EpisodeScore{RootCauses: gt.RootCauseSets(), Predictions: []Prediction{}}}}
	if file == "" {
		ep.Status, ep.Reason = StatusMissing, "no submission file"
		return ep, nil, nil
	}
	_, sub, err := ReadSubmissionFile(file)
	switch {
	case errors.Is(err, fs.ErrPermission), errors.Is(err, syscall.EIO):
		return ep, nil, fmt.Errorf("cannot read the submission %s: %w", file, err)
	case err != nil:
		ep.Status, ep.Reason = StatusInvalid, fmt.Sprintf("%s: %v", file, err)
		return ep, nil, nil
	}
	ep.Status = StatusOK
	return ep, sub.Names, nil
}

// ReadSubmissionFile reads a submission file (which an agent wrote: it may be huge or hostile)
// and the diagnosis in it, with ReadSubmissionWith's rules; the file must be a regular file (a
// FIFO or a device is refused without blocking, see safefile).
func ReadSubmissionFile(path string) ([]byte, Submission, error) {
	return ReadSubmissionWith(func(limit int64) ([]byte, error) { return safefile.ReadPath(path, limit) })
}

// ReadSubmissionWith reads a diagnosis through read, which returns at most limit bytes or a
// safefile error. A file larger than MaxSubmissionBytes, or one that is no regular file, is
// an ErrInvalidSubmission, as is an unreadable diagnosis; a file that cannot be read at all
// keeps its os error (fs.ErrNotExist when it is not there).
func ReadSubmissionWith(read func(limit int64) ([]byte, error)) ([]byte, Submission, error) {
	doc, err := read(MaxSubmissionBytes)
	if err != nil {
		return nil, Submission{}, submissionFileError(err)
	}
	sub, err := ReadSubmission(doc)
	return doc, sub, err
}

// submissionFileError makes a file that is there but is no diagnosis (too large, not a regular
// file) an ErrInvalidSubmission; other errors stay as they are.
func submissionFileError(err error) error {
	switch {
	case errors.Is(err, safefile.ErrTooLarge):
		return fmt.Errorf("%w: larger than %d MiB", ErrInvalidSubmission, MaxSubmissionBytes>>20)
	case errors.Is(err, safefile.ErrNotRegular):
		return fmt.Errorf("%w: %w", ErrInvalidSubmission, err)
	}
	return err
}
