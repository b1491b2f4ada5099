package runner

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
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
// (judge.ErrConflict). out must not hold a run.
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
	if folder.Prev != nil {
		return MergeReport{}, fmt.Errorf("%s %w", out, ErrMergeInto)
	}
	plan := runfolder.Shard{}.Episodes(first.Tasks, first.Repeats)
	var results []runfolder.Result
	for _, e := range plan {
		r, ok := kept[e]
		if !ok || !r.Final() {
			rep.Missing = append(rep.Missing, e)
		}
		if !ok {
			continue
		}
		if err := copyEpisode(runfolder.EpisodeDir(from[e], e), runfolder.EpisodeDir(out, e)); err != nil {
			return MergeReport{}, err
		}
		results = append(results, r)
	}
	first.Shard = ""
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
	spent, err := carryLedgers(folder, read)
	if err != nil {
		return MergeReport{}, err
	}
	rep.Episodes = len(plan)
	_, rep.Summary = runfolder.Collect(plan, kept, first.Judge)
	return rep, folder.WriteSummary(rep.Summary, spent)
}

// carryLedgers joins the shards' ledgers of spend into the merged folder's, every call of every
// attempt, and returns their sum; when a shard has none (written before the ledger was kept)
// the joined run's spend is not known in all, and the merged folder has no ledger either.
func carryLedgers(folder *runfolder.Folder, shards []*runfolder.Run) (*runfolder.Spend, error) {
	var spent runfolder.Spend
	dirs := make([]string, len(shards))
	for i, r := range shards {
		if r.Spend == nil {
			return nil, nil
		}
		spent.Join(*r.Spend)
		dirs[i] = r.Dir
	}
	if err := folder.CarryLedgers(dirs...); err != nil {
		return nil, err
	}
	return &spent, nil
}

// judgeDirs are the judge caches of the run folders.
func judgeDirs(runs []string) []string {
	dirs := make([]string, len(runs))
	for i, r := range runs {
		dirs[i] = filepath.Join(r, runfolder.JudgeDir)
	}
	return dirs
}

// copyEpisode copies an episode's files (trajectory, submission); an episode with no folder
// (it failed before making one) has nothing to copy.
func copyEpisode(from, to string) error {
	if _, err := os.Stat(from); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err := copytree.Copy(from, to); err != nil {
		return fmt.Errorf("copy the episode %s: %w", from, err)
	}
	return nil
}
