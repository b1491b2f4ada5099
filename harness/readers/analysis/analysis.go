// Package analysis looks past the headline score of a run: how close a wrong answer came
// (partial credit on the fault graph), what kind of wrong each false positive is, and how the
// investigation went (from the trajectories). The formula and the classes are in
// docs/analysis.md. Answers are mapped to ground-truth groups by the deterministic rules, so
// a folder of another harness's submissions gets partial credit and classes too.
package analysis

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// Task is what the analysis needs of a dataset task: its ground truth and, when it is on
// disk, its snapshot folder, whose traces give the call topology.
type Task struct {
	grader.Task
	Snapshot string
}

// Run is the analysis of one folder: a run folder or a folder of submissions.
type Run struct {
	Dir      string    `json:"dir"`
	Model    string    `json:"model"` // "" for submissions of another harness
	Summary  Summary   `json:"summary"`
	Episodes []Episode `json:"episodes"`
	// Warnings name what could not be analysed (a ground truth, a trajectory), and why.
	Warnings []string `json:"warnings,omitempty"`
}

// Episode is the analysis of one task x repeat. Investigation fields are empty, and
// Trajectory false, when there is no trajectory (submissions of another harness).
type Episode struct {
	Task          string  `json:"task"`
	Repeat        int     `json:"repeat"`
	Status        string  `json:"status"`
	Score         float64 `json:"score"`
	PartialCredit float64 `json:"partial_credit"`
	// NTAM is the ITBench papers' Normalized Topology-Aware Match on the fault graph, as
	// SREGym computes it (see Key.NTAM), with the analyzer's parameters.
	NTAM           float64         `json:"ntam"`
	FalsePositives []FalsePositive `json:"false_positives"`
	// EntitiesDropped counts the submission's entities past grader.MaxEntities, which were
	// not graded, so have no class.
	EntitiesDropped int            `json:"entities_dropped,omitempty"`
	FirstHitTurn    *int           `json:"first_hit_turn"`
	FirstHitTokens  *int64         `json:"first_hit_tokens"`
	Turns           int            `json:"turns"`
	SourcesRead     []string       `json:"sources_read"`
	Commands        map[string]int `json:"commands"`
	Failed          int            `json:"failed_commands"`
	Truncated       int            `json:"truncated_outputs"`
	Repeated        int            `json:"repeated_commands"`
	// ModelSeconds and ToolSeconds are the episode's time in model calls and in tools, as
	// the run recorded them; null without a run.
	ModelSeconds *float64 `json:"model_s"`
	ToolSeconds  *float64 `json:"tool_s"`
	Trajectory   bool     `json:"trajectory"`
	// RelativeCoveredServices is the share of the fault chain's services the episode named,
	// DetouredServices how many services off the chain it named (docs/analysis.md); null
	// without a trajectory, and the share also without a chain of services.
	RelativeCoveredServices *float64 `json:"relative_covered_services"`
	DetouredServices        *int     `json:"detoured_services"`
}

// Analyzer analyses folders against the tasks of their datasets, reading each snapshot's call
// topology once however many folders share it.
type Analyzer struct {
	// NTAM are the parameters of the episodes' NTAM (DefaultNTAM unless set).
	NTAM       NTAMParams
	topologies map[string]*Topology // by snapshot folder
}

// NewAnalyzer returns an analyzer with nothing read yet and SREGym's NTAM parameters.
func NewAnalyzer() *Analyzer {
	return &Analyzer{NTAM: DefaultNTAM, topologies: map[string]*Topology{}}
}

// Analyze analyses graded episodes: results (grader.GradeSubmissions, the rules mapping) of
// the tasks, and the trajectories and timings of run, nil for a folder of submissions. Of a
// run, the episodes it has not played (not yet, or another shard's) are left out.
func (a *Analyzer) Analyze(dir string, run *runfolder.Run, tasks []Task, results []grader.TaskResult) *Run {
	out := &Run{Dir: dir, Episodes: []Episode{}}
	var prompts *promptset.Set // the run's, to read its shell results
	if run != nil {
		out.Model = run.Header.Model
		var err error
		if prompts, err = runfolder.ReadPrompts(run.Dir, run.Header.PromptSHA256); err != nil {
			out.Warnings = append(out.Warnings,
				fmt.Sprintf("%v: failed and truncated commands are counted as the built-in set words results", err))
		}
	}
	byID := map[string]Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	for _, tr := range results {
		key, err := a.key(byID[tr.Task])
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: %v", tr.Task, err))
		}
		for _, e := range tr.Episodes {
			if run != nil && e.Status == grader.StatusMissing {
				if _, played := run.Results[runfolder.Episode{Task: tr.Task, Repeat: e.Repeat}]; !played {
					continue
				}
			}
			ep := Episode{Task: tr.Task, Repeat: e.Repeat, Status: e.Status, Score: e.Score, EntitiesDropped: e.EntitiesDropped,
				FalsePositives: []FalsePositive{}, SourcesRead: []string{}, Commands: map[string]int{}}
			if key != nil && e.Status == grader.StatusOK {
				as := key.Assess(e.Predictions)
				ep.PartialCredit, ep.FalsePositives = as.PartialCredit, as.FalsePositives
				ep.NTAM = key.NTAM(e.Predictions, a.NTAM)
				if n := len(e.Predictions); n > 0 {
					// Entities past the bound earn nothing, as they are false positives in the score.
					ep.PartialCredit *= float64(n) / float64(n+e.EntitiesDropped)
				}
			}
			if run != nil {
				if w := investigate(&ep, run, key, prompts); w != "" {
					out.Warnings = append(out.Warnings, w)
				}
			}
			out.Episodes = append(out.Episodes, ep)
		}
	}
	out.Summary = Summarise(out.Episodes)
	return out
}

// investigate fills in what the episode's trajectory and result line say; it returns a
// warning when the trajectory is there but cannot be read.
func investigate(ep *Episode, run *runfolder.Run, key *Key, prompts *promptset.Set) string {
	id := runfolder.Episode{Task: ep.Task, Repeat: ep.Repeat}
	if res, ok := run.Results[id]; ok {
		ep.ModelSeconds, ep.ToolSeconds = &res.ModelTime, &res.ToolTime
	}
	turns, err := runfolder.ReadTurns(runfolder.EpisodeDir(run.Dir, id))
	if errors.Is(err, fs.ErrNotExist) {
		return "" // never played, or failed before its first call
	}
	if err != nil {
		return fmt.Sprintf("%s repeat %d: trajectory: %v", ep.Task, ep.Repeat, err)
	}
	fill(ep, Investigate(turns, key, prompts), key)
	return ""
}

// fill sets what an investigation of the episode's trajectory found.
func fill(ep *Episode, inv Investigation, key *Key) {
	ep.Trajectory = true
	ep.Turns, ep.FirstHitTurn, ep.FirstHitTokens = inv.Turns, inv.FirstHitTurn, inv.FirstHitTokens
	ep.SourcesRead, ep.Commands = append(ep.SourcesRead, inv.SourcesRead...), inv.Commands
	ep.Failed, ep.Truncated, ep.Repeated = inv.Failed, inv.Truncated, inv.Repeated
	if key != nil {
		p := key.Propagation(inv.Named)
		ep.RelativeCoveredServices, ep.DetouredServices = p.RelativeCovered, &p.Detoured
	}
}

// key builds a task's fault graph, with the call topology of its snapshot when it is on disk.
func (a *Analyzer) key(t Task) (*Key, error) {
	if t.GroundTruth == nil {
		return nil, errors.New("no ground truth")
	}
	gt, err := grader.ParseGroundTruth(t.GroundTruth)
	if err != nil {
		return nil, fmt.Errorf("ground truth: %w", err)
	}
	topo, err := a.topology(t.Snapshot)
	if err != nil {
		return NewKey(gt, nil), err
	}
	return NewKey(gt, topo), nil
}

func (a *Analyzer) topology(dir string) (*Topology, error) {
	if dir == "" {
		return nil, nil
	}
	if topo, ok := a.topologies[dir]; ok {
		return topo, nil
	}
	topo, err := ReadTopology(dir)
	if err != nil {
		return nil, err
	}
	a.topologies[dir] = topo
	return topo, nil
}

// Folder grades a run folder's submissions with the rules (its episodes without one keep the
// status the run recorded) and analyses them: what report.md and report.html summarise.
func (a *Analyzer) Folder(run *runfolder.Run, tasks []Task) (*Run, error) {
	subs, problems, err := run.Submissions()
	if err != nil {
		return nil, err
	}
	gts := make([]grader.Task, len(tasks))
	for i, t := range tasks {
		gts[i] = t.Task
	}
	// Rules grading never waits on the context; a run interrupted with ^C still gets its
	// reports, so this one cannot be cancelled.
	results, gradeProblems, err := grader.GradeSubmissions(context.Background(), gts, subs,
		grader.GradeOptions{Repeats: run.Header.Repeats})
	if err != nil {
		return nil, err
	}
	run.KeepStatuses(results)
	out := a.Analyze(run.Dir, run, tasks, results)
	for _, p := range append(problems, gradeProblems...) {
		if p.Level == "error" {
			out.Warnings = append(out.Warnings, p.Message)
		}
	}
	return out, nil
}
