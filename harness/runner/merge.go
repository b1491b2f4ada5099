package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/copytree"
)

// MergeReport says what joining run folders found.
type MergeReport struct {
	Episodes   int       // episodes the joined run has
	Missing    []Episode // episodes no folder finished
	Duplicates []Episode // episodes more than one folder finished (the first folder's result is kept)
	Summary    grader.Summary
}

// ErrMergeConfig marks folders that hold runs of different configurations.
var ErrMergeConfig = errors.New("the runs differ")

// Merge joins run folders (typically the shards of one run) into out: run.json without the
// shard, one results.jsonl line per episode, every episode's folder, summary.json. Runs of
// another configuration are refused, naming the fields that differ. out must not hold a run.
func Merge(out string, runs []string) (MergeReport, error) {
	if len(runs) == 0 {
		return MergeReport{}, errors.New("no run folders to merge")
	}
	if _, err := os.Stat(filepath.Join(out, HeaderFile)); err == nil {
		return MergeReport{}, fmt.Errorf("%s already holds a run: merge into a new folder", out)
	}
	var first Header
	for i, dir := range runs {
		h, err := ReadHeader(dir)
		if err != nil {
			return MergeReport{}, fmt.Errorf("%s is not a run folder: %w", dir, err)
		}
		if i == 0 {
			first = h
			continue
		}
		a, b := first, h
		a.Shard, b.Shard = "", ""
		if diff := a.differences(b); len(diff) > 0 {
			return MergeReport{}, fmt.Errorf("%w: %s and %s: %s", ErrMergeConfig, runs[0], dir, strings.Join(diff, "; "))
		}
		if h.Started.Before(first.Started) {
			first.Started = h.Started
		}
	}
	kept := map[string]Result{}
	from := map[string]string{}
	var rep MergeReport
	for _, dir := range runs {
		results, err := ReadResults(dir)
		if err != nil {
			return MergeReport{}, err
		}
		for k, r := range results {
			prev, seen := kept[k]
			switch {
			case seen && prev.Final() && r.Final():
				rep.Duplicates = append(rep.Duplicates, Episode{r.Task, r.Repeat})
			case !seen || (!prev.Final() && r.Final()):
				kept[k], from[k] = r, dir
			}
		}
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return MergeReport{}, err
	}
	plan := Shard{}.Episodes(first.Tasks, first.Repeats)
	var lines []byte
	for _, e := range plan {
		r, ok := kept[e.Key()]
		if !ok || !r.Final() {
			rep.Missing = append(rep.Missing, e)
		}
		if !ok {
			continue
		}
		rel := filepath.Join("episodes", e.Task, strconv.Itoa(e.Repeat))
		if err := copyEpisode(filepath.Join(from[e.Key()], rel), filepath.Join(out, rel)); err != nil {
			return MergeReport{}, err
		}
		line, _ := json.Marshal(r)
		lines = append(append(lines, line...), '\n')
	}
	first.Shard = ""
	if err := writeJSON(filepath.Join(out, HeaderFile), first); err != nil {
		return MergeReport{}, err
	}
	if err := os.WriteFile(filepath.Join(out, ResultsFile), lines, 0o644); err != nil {
		return MergeReport{}, err
	}
	rep.Episodes = len(plan)
	_, rep.Summary = Collect(plan, kept, first.Judge)
	return rep, writeJSON(filepath.Join(out, SummaryFile), rep.Summary)
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
