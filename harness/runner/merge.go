package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/judge"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/copytree"
)

// MergeReport says what joining run folders found.
type MergeReport struct {
	Episodes   int                 // episodes the joined run has
	Missing    []runfolder.Episode // episodes no folder finished
	Duplicates []runfolder.Episode // episodes more than one folder finished (the first folder's result is kept)
	Warnings   []string            // lines of the folders' results.jsonl, and judge answers, that were skipped
	Summary    grader.Summary
}

var (
	// ErrMergeConfig marks folders that hold runs of different configurations.
	ErrMergeConfig = errors.New("the runs differ")
	// ErrMergeInto marks a merge into a folder that already holds a run.
	ErrMergeInto = errors.New("already holds a run: merge into a new folder")
)

// Merge joins run folders (typically the shards of one run) into out: run.json without the
// shard, the prompt set, one results.jsonl line per episode, every episode's folder, the
// judge's answers (judge/), summary.json. Runs of another configuration are refused, naming
// the fields that differ, and so are runs whose judge answered one question two ways
// (judge.ErrConflict). out must hold no run, or one merge wrote of runs of the configuration:
// then its finished episodes stand, and the runs bring the others (run again since).
func Merge(out string, runs []string) (_ MergeReport, err error) {
	if len(runs) == 0 {
		return MergeReport{}, errors.New("no run folders to merge")
	}
	var rep MergeReport
	var first runfolder.Header
	read := make([]*runfolder.Run, len(runs))
	for i, dir := range runs {
		r, err := runfolder.Read(dir)
		if err != nil {
			return MergeReport{}, err
		}
		read[i] = r
		rep.Warnings = append(rep.Warnings, r.Warnings...)
		if i == 0 {
			first = r.Header
			continue
		}
		a, b := first, r.Header
		a.Shard, b.Shard = "", ""
		if diff := a.Differences(b); len(diff) > 0 {
			return MergeReport{}, fmt.Errorf("%w: %s and %s: %s", ErrMergeConfig, runs[0], dir, strings.Join(diff, "; "))
		}
		if r.Header.Started.Before(first.Started) {
			first.Started = r.Header.Started
		}
	}
	judged, err := judge.ReadCaches(judgeDirs(runs)...)
	if err != nil {
		return MergeReport{}, err
	}
	rep.Warnings = append(rep.Warnings, judged.Warnings...)
	kept := map[runfolder.Episode]runfolder.Result{}
	from := map[runfolder.Episode]string{}
	for _, r := range read {
		for e, res := range r.Results {
			prev, seen := kept[e]
			switch {
			case seen && prev.Final() && res.Final():
				rep.Duplicates = append(rep.Duplicates, e)
			case !seen || (!prev.Final() && res.Final()):
				kept[e], from[e] = res, r.Dir
			}
		}
	}
	folder, err := runfolder.Open(out)
	if err != nil {
		return MergeReport{}, err
	}
	defer func() {
		if cerr := folder.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close %s: %w", out, cerr)
		}
	}()
	prev := folder.Prev
	if err := checkMergedBefore(out, prev, first); err != nil {
		return MergeReport{}, err
	}
	if prev != nil {
		if prev.Header.Started.Before(first.Started) {
			first.Started = prev.Header.Started
		}
		first.MergedFrom = prev.Header.MergedFrom
	}
	plan := runfolder.Shard{}.Episodes(first.Tasks, first.Repeats)
	final := map[runfolder.Episode]runfolder.Result{} // of the joined run
	var results []runfolder.Result                    // the lines this merge appends
	for _, e := range plan {
		if r, ok := finished(prev, e); ok { // merged before: kept as it is
			final[e] = r
			continue
		}
		r, ok := kept[e]
		if !ok || !r.Final() {
			rep.Missing = append(rep.Missing, e)
		}
		if !ok {
			continue
		}
		if err := replaceEpisode(runfolder.EpisodeDir(from[e], e), runfolder.EpisodeDir(out, e)); err != nil {
			return MergeReport{}, err
		}
		results = append(results, r)
		final[e] = r
	}
	first.Shard = ""
	first.MergedFrom = joinNames(first.MergedFrom, runs)
	if err := folder.WriteHeader(first); err != nil {
		return MergeReport{}, err
	}
	switch prompts, err := runfolder.ReadPrompts(runs[0], first.PromptSHA256); {
	case err == nil:
		if err := folder.WritePrompts(prompts.Format()); err != nil {
			return MergeReport{}, err
		}
	case errors.Is(err, runfolder.ErrPromptsNotKept): // the shards are older than the file
	default:
		return MergeReport{}, fmt.Errorf("%s: %w", runs[0], err)
	}
	if err := judged.Write(filepath.Join(out, runfolder.JudgeDir)); err != nil {
		return MergeReport{}, err
	}
	if err := folder.Append(results...); err != nil {
		return MergeReport{}, err
	}
	spent, err := carryLedgers(folder, read, func(e runfolder.Episode) bool {
		_, done := finished(prev, e)
		return !done
	})
	if err != nil {
		return MergeReport{}, err
	}
	rep.Episodes = len(plan)
	_, rep.Summary = runfolder.Collect(plan, final, first.Judge)
	return rep, folder.WriteSummary(rep.Summary, spent)
}

// checkMergedBefore refuses to merge into out, which holds the run prev (nil: none), unless
// merge wrote it of runs of the configuration first: then the merge completes it.
func checkMergedBefore(out string, prev *runfolder.Run, first runfolder.Header) error {
	if prev == nil {
		return nil
	}
	if prev.Header.MergedFrom == nil {
		return fmt.Errorf("%s %w", out, ErrMergeInto)
	}
	a := first
	a.Shard = ""
	if diff := prev.Header.Differences(a); len(diff) > 0 {
		return fmt.Errorf("%w: %s (merged before) and the runs merged now: %s", ErrMergeConfig, out, strings.Join(diff, "; "))
	}
	return nil
}

// finished is the final result of e in the run merged before, if it has one; none for no run.
func finished(r *runfolder.Run, e runfolder.Episode) (runfolder.Result, bool) {
	if r == nil {
		return runfolder.Result{}, false
	}
	res, ok := r.Results[e]
	return res, ok && res.Final()
}

// joinNames adds to names the run folders not in it yet.
func joinNames(names, runs []string) []string {
	for _, r := range runs {
		if !slices.Contains(names, r) {
			names = append(names, r)
		}
	}
	return names
}

// carryLedgers joins the shards' ledgers of spend into the merged folder's, every call of every
// attempt at the episodes take accepts (all but those a merge before finished, whose lines the
// folder keeps; it loses its lines of the others for the shards'), and returns the ledger's sum;
// when a shard has none (written before the ledger was kept) the joined run's spend is not known
// in all, and the merged folder has no ledger either.
func carryLedgers(folder *runfolder.Folder, shards []*runfolder.Run,
	take func(runfolder.Episode) bool) (*runfolder.Spend, error) {
	dirs := make([]string, len(shards))
	for i, r := range shards {
		if r.Spend == nil {
			return nil, nil
		}
		dirs[i] = r.Dir
	}
	if err := folder.DropCharges(take); err != nil {
		return nil, err
	}
	if err := folder.CarryLedgers(take, dirs...); err != nil {
		return nil, err
	}
	return folder.Spent()
}

// judgeDirs are the judge caches of the run folders.
func judgeDirs(runs []string) []string {
	dirs := make([]string, len(runs))
	for i, r := range runs {
		dirs[i] = filepath.Join(r, runfolder.JudgeDir)
	}
	return dirs
}

// replaceEpisode copies an episode's files (trajectory, submission) over what a merge before
// copied of it; an episode with no folder (it failed before making one) has nothing to copy.
func replaceEpisode(from, to string) error {
	if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := os.RemoveAll(to); err != nil {
		return fmt.Errorf("replace the episode %s: %w", to, err)
	}
	if err := copytree.Copy(from, to); err != nil {
		return fmt.Errorf("copy the episode %s: %w", from, err)
	}
	return nil
}
