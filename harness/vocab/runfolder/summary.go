package runfolder

import (
	"slices"

	"github.com/aa-grade/aa-grade/grader"
)

// Collect lists a run's episodes in order, one missing from done as unfinished, and
// summarises them: the same numbers for a finished run and for a partial one.
func Collect(plan []Episode, done map[Episode]Result, judge string) ([]Result, grader.Summary) {
	all := make([]Result, 0, len(plan))
	for _, e := range plan {
		res, ok := done[e]
		if !ok {
			res = Result{Task: e.Task, Repeat: e.Repeat, Status: grader.StatusUnfinished,
				Error: "not run (the run was interrupted or has not reached it)"}
		}
		all = append(all, res)
	}
	return all, Summarise(all, judge)
}

// Summarise grades a run's results: per task in the order they come, repeats in order, with
// the judge's statistics when a judge graded them.
func Summarise(results []Result, judge string) grader.Summary {
	var perTask []grader.TaskResult
	index := map[string]int{}
	for _, r := range results {
		i, ok := index[r.Task]
		if !ok {
			i = len(perTask)
			index[r.Task] = i
			perTask = append(perTask, grader.TaskResult{Task: r.Task})
		}
		perTask[i].Episodes = append(perTask[i].Episodes, toEpisode(r))
	}
	for _, t := range perTask {
		slices.SortFunc(t.Episodes, func(a, b grader.Episode) int { return a.Repeat - b.Repeat })
	}
	summary := grader.Summarise(perTask)
	if judge != "" {
		summary.Judge = grader.JudgeSummary(judge, perTask)
	}
	return summary
}

// toEpisode is a result as the grader summarises it.
func toEpisode(r Result) grader.Episode {
	return grader.Episode{Repeat: r.Repeat, Status: r.Status, Reason: r.Error, Verdict: grader.Verdict{
		EpisodeScore: grader.EpisodeScore{Score: r.Score, TP: r.TP, FP: r.FP, RootCauses: r.RootCauses,
			RootCausesFound: r.RootCausesFound, Predictions: []grader.Prediction{}, EntitiesDropped: r.EntitiesDropped},
		Matcher: r.Matcher, JudgeNote: r.JudgeNote, Rules: r.Rules}}
}
