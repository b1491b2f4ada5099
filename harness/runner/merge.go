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
	if _, err := os.Stat(filepath.Join(out, "run.json")); err == nil {
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
	var lines []byte
	var all []Result
	for _, task := range first.Tasks {
		for repeat := 1; repeat <= first.Repeats; repeat++ {
			e := Episode{task, repeat}
			r, ok := kept[e.Key()]
			if !ok || !r.Final() {
				rep.Missing = append(rep.Missing, e)
			}
			if !ok {
				r = Result{Task: task, Repeat: repeat, Status: grader.StatusUnfinished, Error: "in none of the merged runs"}
			} else if err := copyEpisode(filepath.Join(from[e.Key()], "episodes", task, strconv.Itoa(repeat)), filepath.Join(out, "episodes", task, strconv.Itoa(repeat))); err != nil {
				return MergeReport{}, err
			}
			if ok {
				line, _ := json.Marshal(r)
				lines = append(append(lines, line...), '\n')
			}
			all = append(all, r)
		}
	}
	first.Shard = ""
	b, _ := json.MarshalIndent(first, "", "  ")
	if err := os.WriteFile(filepath.Join(out, "run.json"), b, 0o644); err != nil {
		return MergeReport{}, err
	}
	if err := os.WriteFile(filepath.Join(out, ResultsFile), lines, 0o644); err != nil {
		return MergeReport{}, err
	}
	rep.Episodes, rep.Summary = len(all), Summarise(all, first.Judge)
	b, _ = json.MarshalIndent(rep.Summary, "", "  ")
	return rep, os.WriteFile(filepath.Join(out, "summary.json"), b, 0o644)
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
