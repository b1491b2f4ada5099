// Package report turns run folders into reports: results.parquet (one row per episode for
// any data tool), report.md (one run, beside the published leaderboard) and report.html (one
// self-contained page comparing runs). Everything read from a run folder is untrusted: it is
// escaped wherever it is rendered.
package report

import (
	"cmp"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/english"
)

// Run is one run folder as the reports see it.
type Run struct {
	Dir    string
	Header runfolder.Header
	// Results are the finished episodes, deduplicated as the runner reads them, in task order
	// then repeat order.
	Results []runfolder.Result
	// Warnings name the lines of results.jsonl that were skipped.
	Warnings []string
	// Summary covers every task x repeat of the run, those not run yet counting as errors, so
	// a report on a partial run shows what a resume would start from.
	Summary grader.Summary
	// Analysis is the run's analysis (partial credit, false positives, investigation), nil
	// when the reports were asked for without the dataset's ground truths.
	Analysis *analysis.Run
	// AnalysisErr says why the analysis is missing although it was asked for.
	AnalysisErr error
	// RateLimitsErr says why run.json lacks the rate limits Finish was given.
	RateLimitsErr error
	// Spent is what the run spent in all (runfolder.Run.Spend); nil without a ledger.
	Spent *runfolder.Spend

	folder *runfolder.Run // the folder as Load read it, for the analysis
}

// Load reads the run folder dir, with runfolder.Read's errors. Tasks or repeats found in
// results.jsonl beyond those in run.json are kept, so nothing recorded is left out of a
// report.
func Load(dir string) (*Run, error) {
	folder, err := runfolder.Read(dir)
	if err != nil {
		return nil, err
	}
	h, done := folder.Header, folder.Results
	tasks, repeats := slices.Clone(h.Tasks), h.Repeats
	order := map[string]int{}
	for i, t := range tasks {
		if _, ok := order[t]; !ok {
			order[t] = i
		}
	}
	var extra []string
	for _, r := range done {
		if _, ok := order[r.Task]; !ok {
			order[r.Task] = -1
			extra = append(extra, r.Task)
		}
		repeats = max(repeats, r.Repeat)
	}
	slices.Sort(extra)
	for _, t := range extra {
		order[t] = len(tasks)
		tasks = append(tasks, t)
	}
	run := &Run{Dir: dir, Header: h, Results: slices.Collect(maps.Values(done)), Warnings: folder.Warnings,
		Spent: folder.Spend, folder: folder}
	slices.SortFunc(run.Results, func(a, b runfolder.Result) int {
		return cmp.Or(cmp.Compare(order[a.Task], order[b.Task]), cmp.Compare(a.Repeat, b.Repeat))
	})
	shard, err := runfolder.ParseShard(h.Shard)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", runfolder.ErrCorrupt, filepath.Join(dir, runfolder.HeaderFile), err)
	}
	_, run.Summary = runfolder.Collect(shard.Episodes(tasks, repeats), done, h.Judge)
	return run, nil
}

// Overview is one run in a line: what `aa-grade report` prints and the leaderboard shows.
type Overview struct {
	Dir     string  `json:"dir"`
	Model   string  `json:"model"`
	Dataset string  `json:"dataset"`
	Score   float64 `json:"score"`
	// CI95 is null below grader.MinTasksForInterval tasks.
	CI95     *[2]float64 `json:"ci95"`
	Tasks    int         `json:"tasks"`
	Repeats  int         `json:"repeats"`
	Episodes int         `json:"episodes"`
	// Statuses counts the finished episodes by status; NotRun the episodes not run yet.
	Statuses map[string]int `json:"statuses"`
	NotRun   int            `json:"not_run"`
	// Errors counts the episodes a resumed run would play again: ended in error or not run.
	Errors int `json:"errors"`
	// CostUSD is the total and CostPerTask the mean of a finished episode (one attempt at one
	// task, as the leaderboard's $/task): the scored episodes' last attempts; both null when
	// prices are unknown.
	CostUSD     *float64 `json:"cost_usd"`
	CostPerTask *float64 `json:"cost_per_task_usd"`
	// Spent is what the run spent in all, its ledger's sum (runfolder.SpendFile): every call of
	// every attempt, those played again, stopped or unfinished included; null for a folder
	// written before the ledger was kept.
	Spent     *runfolder.Spend `json:"spent"`
	MeanTurns float64          `json:"mean_turns"`
	Tokens    model.Usage      `json:"tokens"`
	// Grading says who mapped entities to ground-truth groups: "rules" or "judge MODEL"; Judge
	// has the judge's statistics (episodes it decided, fallbacks, agreement with the rules).
	Grading string             `json:"grading"`
	Judge   *grader.JudgeStats `json:"judge,omitempty"`
	// Loop is the agent loop the episodes followed; Caveat, LenientNote when the run's scores
	// do not compare with the leaderboard.
	// Shard is the part of the run the folder holds ("1/2"), "" for a whole run.
	Shard  string `json:"shard,omitempty"`
	Loop   string `json:"loop"`
	Caveat string `json:"caveat,omitempty"`
	// ModelParams are the parameters of the user's the model was called with (temperature,
	// top_p, extra fields and headers, run.json's model_params), "" for none.
	ModelParams string `json:"model_params,omitempty"`
	// OtherTasks says why the run is not ranked against the published leaderboard (its dataset
	// or tasks are not ITBench-AA's); "" when it is.
	OtherTasks string `json:"other_tasks,omitempty"`
	// VersusFirst compares a run after the first of a report with the first (Overviews); nil
	// for the first run and for a run reported alone.
	VersusFirst *Versus `json:"versus_first,omitempty"`
}

// LenientNote is what every report and page says of a run that did not follow the reference
// loop.
const LenientNote = "Not comparable with the published leaderboard: this run followed the lenient loop (--loop " +
	"lenient), not the reference one."

// ParamsNote is what every report and page says of a run whose model was called with
// parameters of the user's (run --temperature, --top-p, --model-arg, --model-header).
const ParamsNote = "Not comparable with the published leaderboard: the model was called with " +
	"parameters of the user's (run --temperature, --top-p, --model-arg or --model-header), " +
	"which the reference harness does not send."

// agentNote is what every report and page says of an agent run: another harness than the
// published one played its episodes.
func agentNote(a *runfolder.AgentInfo) string {
	note := fmt.Sprintf(
		"Not comparable with the published leaderboard: %s played the episodes (--agent), not the reference loop.", a)
	if a.ProviderTools {
		note += " " + ProviderToolsNote
	}
	return note
}

// ProviderToolsNote is what every report and page adds of an agent run that allowed the
// provider's own tools.
const ProviderToolsNote = "Its model calls could use the provider's own tools (web search, web fetch, MCP, code " +
	"execution: --allow-provider-tools), so it compares neither with the leaderboard nor with runs without them."

// ErrorsText is Errors as tables show it, with how many of them are not run yet: "21 (21 not
// run)" is a run half played, not one that failed.
func (o Overview) ErrorsText() string {
	if o.NotRun == 0 {
		return strconv.Itoa(o.Errors)
	}
	return fmt.Sprintf("%d (%d not run)", o.Errors, o.NotRun)
}

// Agreement says in a line how a judged run was graded and how often judge and rules agree.
func (o Overview) Agreement() string {
	j := o.Judge
	if j == nil {
		return "the deterministic rules"
	}
	share := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return fmt.Sprintf("%.0f%%", 100**v)
	}
	return fmt.Sprintf(
		"judge %s decided %s (%d fell back to the rules); judge and rules give the same score in %s of them and map %s of "+
			"entities alike; the rules alone would score %.3f", OneLine(j.Model, 80), english.Count(j.Judged, "episode"),
		j.Fallbacks, share(j.ScoreAgreement), share(j.EntityAgreement), j.RulesScore)
}

// SpentText is what the run spent in all as every text and page says it (runfolder.Spend.Text),
// "not recorded" for a folder written before the ledger was kept.
func (o Overview) SpentText() string {
	if o.Spent == nil {
		return "not recorded"
	}
	return o.Spent.Text()
}

// SpendNote says in a line what the run spent in all beside what its scored episodes cost,
// and why the two differ.
func (o Overview) SpendNote() string {
	scored := fmt.Sprintf("the scored episodes cost %s (the last attempt of each)", FormatUSD(o.CostUSD))
	if o.Spent == nil {
		return fmt.Sprintf(
			"Spent in all: not recorded (the folder was written before %s, the ledger of every model call); %s.",
			runfolder.SpendFile, scored)
	}
	return fmt.Sprintf(
		"Spent in all: %s over %s (%s: every call, those of episodes stopped, failed, unfinished or played again "+
			"included); %s.", o.Spent.Text(), english.Count(o.Spent.Calls, "model call"), runfolder.SpendFile, scored)
}

// CIText is the run's 95% interval as every report shows it (grader.FormatCI).
func (o Overview) CIText() string { return grader.FormatCI(o.CI95) }

// SoFar labels a score while some of its episodes have not finished (not run yet, running,
// or stopped unfinished): they count 0 in it, as in the final score. The terminal, the reports
// and the viewer give a score in progress this one way, labelled alike, so that they agree.
func SoFar(notFinished int) string {
	if notFinished <= 0 {
		return ""
	}
	return fmt.Sprintf(" (%d not finished, counted 0)", notFinished)
}

// ScoreSoFar is a run's score while it plays, as the live line and the viewer give it: the mean
// over the finished episodes (sum is their scores' sum), with how many of them there are, so a
// partial score never reads as a result; the score alone once every episode has finished.
func ScoreSoFar(sum float64, finished, total int) string {
	switch {
	case finished >= total && total > 0:
		return fmt.Sprintf("score %.3f", sum/float64(total))
	case finished == 0:
		return fmt.Sprintf("no score yet (0 of %d finished)", total)
	}
	return fmt.Sprintf("score %.3f over %d of %d finished", sum/float64(finished), finished, total)
}

// SoFar labels the run's score (the package's SoFar) by its episodes not run yet, unfinished
// or stopped at the budget.
func (o Overview) SoFar() string { return SoFar(o.NotFinished()) }

// ScoreSoFar is the run's score over its finished episodes, with how many of them there are
// (the package's ScoreSoFar), as the viewer shows a run in progress.
func (o Overview) ScoreSoFar() string {
	return ScoreSoFar(o.Score*float64(o.Episodes), o.Episodes-o.NotFinished(), o.Episodes)
}

// NotFinished counts the run's episodes not run yet, unfinished or stopped at the budget.
func (o Overview) NotFinished() int {
	return o.NotRun + o.Statuses[grader.StatusUnfinished] + o.Statuses[grader.StatusCostLimit]
}

// Extent says what the run's counts are over (grader.Summary.Extent): a shard's episodes are
// part of its tasks x repeats.
func (o Overview) Extent() string {
	return grader.Summary{Tasks: o.Tasks, Repeats: o.Repeats, Episodes: o.Episodes}.Extent()
}

// Partial says some tasks lack some repeats (PartialNote).
func (o Overview) Partial() bool { return o.Episodes != o.Tasks*o.Repeats }

// Overview sums the run up.
func (r *Run) Overview() Overview {
	o := Overview{Dir: r.Dir, Model: r.Header.Model, Dataset: r.Header.Dataset, Score: r.Summary.Score,
		CI95: r.Summary.CI95, Tasks: r.Summary.Tasks, Repeats: r.Summary.Repeats, Episodes: r.Summary.Episodes,
		Statuses: map[string]int{}, NotRun: r.Summary.Episodes - len(r.Results), Grading: "rules", Judge: r.Summary.Judge,
		Loop: r.Header.LoopName(), Shard: r.Header.Shard}
	switch {
	case r.Header.Agent != nil:
		o.Caveat, o.Loop = agentNote(r.Header.Agent), "agent "+r.Header.Agent.String()
	case r.Header.LoopName() != string(settings.LoopReference):
		o.Caveat = LenientNote
	case !r.Header.Params.IsZero():
		o.Caveat = ParamsNote
	}
	o.ModelParams = r.Header.Params.String()
	var tasks []string
	for _, t := range r.Summary.PerTask {
		tasks = append(tasks, t.Task)
	}
	o.OtherTasks = otherTasks(r.Header.Dataset, tasks)
	if o.Judge != nil {
		o.Grading = "judge " + o.Judge.Model
	}
	o.Errors = o.NotRun
	turns := 0
	for _, e := range r.Results {
		o.Statuses[e.Status]++
		if !e.Final() {
			o.Errors++
		}
		turns += e.Turns
		o.Tokens.Add(e.Tokens)
	}
	o.CostUSD, o.Spent = cost(r.Results, r.priced()), r.Spent
	if n := len(r.Results); n > 0 {
		o.MeanTurns = float64(turns) / float64(n)
		o.CostPerTask = per(o.CostUSD, n)
	}
	return o
}

// TaskStats is one task of a run: its score over every repeat, and what its finished episodes
// used.
type TaskStats struct {
	Task     string  `json:"task"`
	Score    float64 `json:"score"`
	Episodes int     `json:"episodes"` // finished
	// Statuses of the finished episodes, in repeat order.
	Statuses       []string    `json:"statuses"`
	MeanTurns      float64     `json:"mean_turns"`
	MeanToolCalls  float64     `json:"mean_tool_calls"`
	Tokens         model.Usage `json:"tokens"`
	CostUSD        *float64    `json:"cost_usd"`
	CostPerEpisode *float64    `json:"cost_per_episode_usd"`
}

// PerTask gives each task of the run, in the run's order.
func (r *Run) PerTask() []TaskStats {
	byTask := map[string][]runfolder.Result{}
	for _, e := range r.Results {
		byTask[e.Task] = append(byTask[e.Task], e)
	}
	var out []TaskStats
	for _, t := range r.Summary.PerTask {
		s := TaskStats{Task: t.Task, Score: t.Score}
		eps := byTask[t.Task]
		turns, tools := 0, 0
		for _, e := range eps {
			s.Statuses = append(s.Statuses, e.Status)
			turns += e.Turns
			tools += e.ToolCalls
			s.Tokens.Add(e.Tokens)
		}
		s.Episodes = len(eps)
		s.CostUSD = cost(eps, r.priced())
		if s.Episodes > 0 {
			s.MeanTurns = float64(turns) / float64(s.Episodes)
			s.MeanToolCalls = float64(tools) / float64(s.Episodes)
			s.CostPerEpisode = per(s.CostUSD, s.Episodes)
		}
		out = append(out, s)
	}
	return out
}

// cost sums what episodes cost. In a run with prices, an episode with no cost_usd that used no
// tokens (it failed before its first call) cost nothing; otherwise an episode without a cost
// makes the sum unknown (nil), never zero: a run without prices has no known cost at all.
func cost(episodes []runfolder.Result, priced bool) *float64 {
	var sum float64
	for _, e := range episodes {
		switch {
		case e.CostUSD != nil:
			sum += *e.CostUSD
		case !priced || e.Tokens != model.Usage{}:
			return nil
		}
	}
	return &sum
}

// priced says the run's prices are known (run.json's, the latest when a resume changed them).
func (r *Run) priced() bool { return r.Header.Prices != nil }

func per(total *float64, n int) *float64 {
	if total == nil {
		return nil
	}
	v := *total / float64(n)
	return &v
}
