package atif

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// File is the name of an ATIF document in both layouts Find reads.
const File = "trajectory.json"

// The layouts of a folder of trajectories.
const (
	// LayoutEpisodes is aa-grade's export: TASK/REPEAT/trajectory.json.
	LayoutEpisodes = "<task>/<repeat>/trajectory.json"
	// LayoutHarbor is a Harbor job: TRIAL/agent/trajectory.json, the task named by the trial's
	// result.json (task_name) or config.json (task.path); a folder of jobs is read too.
	LayoutHarbor = "<trial>/agent/trajectory.json (a Harbor job)"
)

// Episode is a trajectory found for one task x repeat.
type Episode struct {
	Task   string
	Repeat int
	Path   string // the ATIF document
}

// Found is what Find found: the layout, the episodes, and what it could not map to a task and
// a repeat (each naming the folder and why).
type Found struct {
	Layout   string
	Episodes []Episode
	Problems []string
}

// Find looks for ATIF trajectories in dir, in aa-grade's export layout or in Harbor's trial
// layout; Found.Episodes is empty when there are none. A Harbor job numbers each task's trials
// in the order they started (result.json's started_at, then the trial's name) as repeats 1,
// 2, ...
func Find(dir string) (Found, error) {
	if found, err := findEpisodes(dir); err != nil || len(found.Episodes) > 0 {
		return found, err
	}
	return findHarbor(dir)
}

// findEpisodes reads TASK/REPEAT/trajectory.json.
func findEpisodes(dir string) (Found, error) {
	found := Found{Layout: LayoutEpisodes}
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*", File))
	if err != nil {
		return found, err
	}
	for _, p := range paths {
		repeatDir := filepath.Dir(p)
		task := filepath.Base(filepath.Dir(repeatDir))
		if filepath.Base(repeatDir) == "agent" {
			continue // a Harbor trial's
		}
		repeat, err := strconv.Atoi(filepath.Base(repeatDir))
		if err != nil || repeat < 1 {
			found.Problems = append(found.Problems, fmt.Sprintf("%s: ignored: %s is not a repeat number (expected %s)", p,
				filepath.Base(repeatDir), LayoutEpisodes))
			continue
		}
		found.Episodes = append(found.Episodes, Episode{Task: task, Repeat: repeat, Path: p})
	}
	return found, nil
}

// trial is a Harbor trial folder as read.
type trial struct {
	dir, task, started string
}

// findHarbor reads a Harbor job's trials, or the trials of a folder of jobs.
func findHarbor(dir string) (Found, error) {
	found := Found{Layout: LayoutHarbor}
	var paths []string
	for _, pattern := range []string{filepath.Join(dir, "*", "agent", File), filepath.Join(dir, "*", "*", "agent", File)} {
		p, err := filepath.Glob(pattern)
		if err != nil {
			return found, err
		}
		paths = append(paths, p...)
	}
	var trials []trial
	for _, p := range paths {
		t, err := readTrial(filepath.Dir(filepath.Dir(p)))
		if err != nil {
			found.Problems = append(found.Problems, fmt.Sprintf("%s: ignored: %v", p, err))
			continue
		}
		trials = append(trials, t)
	}
	slices.SortFunc(trials, func(a, b trial) int {
		return cmp.Or(strings.Compare(a.task, b.task), strings.Compare(a.started, b.started), strings.Compare(a.dir, b.dir))
	})
	repeat := map[string]int{}
	for _, t := range trials {
		repeat[t.task]++
		found.Episodes = append(found.Episodes,
			Episode{Task: t.task, Repeat: repeat[t.task], Path: filepath.Join(t.dir, "agent", File)})
	}
	return found, nil
}

// maxTrialFile bounds a trial's result.json and config.json (a few KiB).
const maxTrialFile = 4 << 20

// readTrial reads the task of a Harbor trial folder: result.json's task_name, else the last
// part of config.json's task.path; and when it started.
func readTrial(dir string) (trial, error) {
	var result struct {
		TaskName  string `json:"task_name"`
		StartedAt string `json:"started_at"`
	}
	var config struct {
		Task struct {
			Path string `json:"path"`
		} `json:"task"`
	}
	if err := readJSON(filepath.Join(dir, "result.json"), &result); err != nil {
		return trial{}, err
	}
	if err := readJSON(filepath.Join(dir, "config.json"), &config); err != nil {
		return trial{}, err
	}
	task := result.TaskName
	if task == "" && config.Task.Path != "" {
		task = filepath.Base(filepath.FromSlash(config.Task.Path))
	}
	if task == "" {
		return trial{}, errors.New("the trial names no task (neither result.json's task_name nor config.json's task.path)")
	}
	if !filepath.IsLocal(task) || filepath.Base(task) != task {
		return trial{}, fmt.Errorf("the trial's task %q is not a task id", task)
	}
	return trial{dir: dir, task: task, started: result.StartedAt}, nil
}

// readJSON reads a trial's JSON file into v; a file that is not there leaves v as it is.
func readJSON(path string, v any) error {
	b, err := safefile.ReadPath(path, maxTrialFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// WriteSubmissions writes the diagnosis of each episode found as TASK/REPEAT.json under out,
// the layout grader.FindSubmissions reads, so that the trajectories grade as any submissions
// do; sources maps each file written to where its answer is (the trajectory, and the step), for
// messages about it. An episode whose trajectory cannot be read, or holds no answer, gets no
// file (it grades as missing) and a problem naming it.
func WriteSubmissions(found Found, out string) (sources map[string]string, problems []string, err error) {
	sources = map[string]string{}
	for _, e := range found.Episodes {
		t, err := Read(e.Path)
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		doc, where, ok := Diagnosis(t)
		if !ok {
			problems = append(problems,
				fmt.Sprintf("%s: no answer: no agent message and no result holding %s", e.Path, grader.SubmissionFile))
			continue
		}
		dir := filepath.Join(out, e.Task)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, nil, err
		}
		file := filepath.Join(dir, strconv.Itoa(e.Repeat)+".json")
		if err := os.WriteFile(file, doc, 0o644); err != nil {
			return nil, nil, err
		}
		sources[file] = fmt.Sprintf("%s (%s)", e.Path, where)
	}
	return sources, problems, nil
}
