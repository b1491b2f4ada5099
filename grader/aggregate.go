package grader

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/aa-grade/aa-grade/internal/english"
)

// Episode statuses (docs/design.md). Only `ok` episodes were graded; every other status scores 0.
const (
	StatusOK           = "ok"
	StatusMissing      = "missing"       // no submission file
	StatusInvalid      = "invalid"       // the submission could not be read
	StatusNoSubmission = "no_submission" // the episode ended without one
	StatusMaxTurns     = "max_turns"     // the turn cap was reached
	// StatusOutputLimit, StatusContextOverflow and StatusInvalidArguments end an episode the
	// reference loop would have crashed: a reply cut at the output cap, a context the provider
	// refused as too long, a tool call whose arguments are not JSON. They are the model's
	// outcome, not an infrastructure failure: scored 0 like a missing answer, and not run again
	// on resume.
	StatusOutputLimit      = "output_limit"
	StatusContextOverflow  = "context_overflow"
	StatusInvalidArguments = "invalid_arguments"
	StatusError            = "error"      // infrastructure failure after retries
	StatusUnfinished       = "unfinished" // a run was interrupted during the episode
	// StatusCostLimit is an episode stopped when the run's spend reached its budget
	// (--max-cost): not the model's outcome, so scored 0 like an unfinished one and run again
	// on resume, with a higher budget.
	StatusCostLimit = "cost_limit"
	// StatusRefusedLimit is an agent's episode (run --agent) ended because the model gateway
	// refused its requests too often (harness/episode/gateway.MaxRefusals): the agent's outcome, a
	// broken or hostile one, scored 0 and not run again on resume.
	StatusRefusedLimit = "refused_limit"
)

// Episode is the result of one (task, repeat).
type Episode struct {
	Repeat int    `json:"repeat"`
	Status string `json:"status"`
	Reason string `json:"reason,omitempty"` // why an episode is not ok
	Verdict
}

// TaskResult holds the episodes of one task and their mean.
type TaskResult struct {
	Task     string    `json:"task"`
	Score    float64   `json:"score"`
	Episodes []Episode `json:"episodes"`
}

// Summary is the headline of a set of graded episodes: the schema shared by `grade --json`
// and a run's summary.json.
type Summary struct {
	Score float64 `json:"score"`
	// CI95 is null below MinTasksForInterval tasks: too few for an interval to mean anything.
	CI95  *[2]float64 `json:"ci95"`
	Tasks int         `json:"tasks"`
	// Repeats is the highest repeat number graded. Episodes can be fewer than Tasks x Repeats:
	// a shard, or a filter, leaves some tasks without some repeats (see Extent).
	Repeats  int `json:"repeats"`
	Episodes int `json:"episodes"`
	// FullRecallRate is the share of episodes that found every root cause;
	// FullRecallPrecision the mean precision of those episodes (null when there are none).
	FullRecallRate      float64      `json:"full_recall_rate"`
	FullRecallPrecision *float64     `json:"full_recall_precision"`
	PerTask             []TaskResult `json:"per_task"`
	// Judge is present when an LLM judge graded (see JudgeSummary).
	Judge *JudgeStats `json:"judge,omitempty"`
}

// JudgeStats tell how far an LLM judge's grading can be trusted, and how far the rules
// approximate it.
type JudgeStats struct {
	Model string `json:"model"`
	// Judged counts the graded episodes the judge decided; Fallbacks those the rules graded
	// because the judge's call failed.
	Judged    int `json:"episodes_judged"`
	Fallbacks int `json:"fallbacks"`
	// ScoreAgreement is the share of judged episodes whose rules' score equals the judge's;
	// EntityAgreement the share of their entities the rules map to the same scoring set. Each
	// is null when there was nothing to compare.
	ScoreAgreement  *float64 `json:"score_agreement"`
	EntityAgreement *float64 `json:"entity_agreement"`
	// RulesScore is what the headline score would be had the rules graded every episode.
	RulesScore float64 `json:"rules_score"`
}

// JudgeSummary computes the judge statistics of graded tasks.
func JudgeSummary(model string, tasks []TaskResult) *JudgeStats {
	j := &JudgeStats{Model: model}
	var rulesTotal float64
	episodes, sameScore, entities, sameSet := 0, 0, 0, 0
	for _, t := range tasks {
		for _, e := range t.Episodes {
			episodes++
			rulesTotal += e.Score
			switch {
			case e.Status != StatusOK:
			case e.Matcher == MatcherRules:
				j.Fallbacks++
			case e.Rules != nil:
				j.Judged++
				rulesTotal += e.Rules.Score - e.Score
				if e.Rules.Score == e.Score {
					sameScore++
				}
				entities += e.Rules.Agreed + len(e.Rules.Disagreed)
				sameSet += e.Rules.Agreed
			}
		}
	}
	if episodes > 0 {
		j.RulesScore = rulesTotal / float64(episodes)
	}
	j.ScoreAgreement, j.EntityAgreement = share(sameScore, j.Judged), share(sameSet, entities)
	return j
}

// share is part/whole, or nil when whole is 0.
func share(part, whole int) *float64 {
	if whole == 0 {
		return nil
	}
	s := float64(part) / float64(whole)
	return &s
}

// BootstrapResamples and BootstrapSeed fix the confidence interval so output is reproducible.
const (
	BootstrapResamples = 10000
	BootstrapSeed      = 20260527
)

// Summarise computes the headline over tasks x repeats: the mean score of all episodes, a 95%
// confidence interval by bootstrap over tasks (a task's repeats stay together; none below
// MinTasksForInterval tasks), the
// full-recall rate and the mean precision of full-recall episodes. Task scores are filled in.
func Summarise(tasks []TaskResult) Summary {
	s := Summary{Tasks: len(tasks), PerTask: tasks}
	var total, fullRecallPrecision float64
	fullRecall := 0
	taskMeans := make([]float64, len(tasks))
	taskWeights := make([]float64, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		var sum float64
		for _, e := range t.Episodes {
			sum += e.Score
			if e.FullRecall() {
				fullRecall++
				fullRecallPrecision += precision(e.EpisodeScore)
			}
		}
		n := len(t.Episodes)
		s.Episodes += n
		for _, e := range t.Episodes {
			s.Repeats = max(s.Repeats, e.Repeat)
		}
		total += sum
		if n > 0 {
			t.Score = sum / float64(n)
		}
		taskMeans[i], taskWeights[i] = sum, float64(n)
	}
	if s.Episodes == 0 {
		return s
	}
	s.Score = total / float64(s.Episodes)
	s.FullRecallRate = float64(fullRecall) / float64(s.Episodes)
	if fullRecall > 0 {
		p := fullRecallPrecision / float64(fullRecall)
		s.FullRecallPrecision = &p
	}
	if s.Tasks >= MinTasksForInterval {
		ci := bootstrapCI(taskMeans, taskWeights)
		s.CI95 = &ci
	}
	return s
}

// Extent says what the summary is over: "2 tasks x 3 repeats = 6 episodes", or, when some
// tasks lack some repeats (a shard's results, or a filter's), "3 of the 6 episodes of 2 tasks
// x 3 repeats", so that a partial count never reads as the whole.
func (s Summary) Extent() string {
	grid := fmt.Sprintf("%s x %s", english.Count(s.Tasks, "task"), english.Count(s.Repeats, "repeat"))
	if all := s.Tasks * s.Repeats; s.Episodes != all {
		return fmt.Sprintf("%d of the %d episodes of %s", s.Episodes, all, grid)
	}
	return fmt.Sprintf("%s = %s", grid, english.Count(s.Episodes, "episode"))
}

// FormatCI writes a headline interval as every command and report shows it: "0.330-0.490",
// or "n/a (fewer than 5 tasks)" when there are too few tasks for one.
func FormatCI(ci *[2]float64) string {
	if ci == nil {
		return fmt.Sprintf("n/a (fewer than %d tasks)", MinTasksForInterval)
	}
	return fmt.Sprintf("%.3f-%.3f", ci[0], ci[1])
}

func precision(s EpisodeScore) float64 {
	if s.TP+s.FP == 0 {
		return 0
	}
	return float64(s.TP) / float64(s.TP+s.FP)
}

// bootstrapCI resamples tasks with replacement and returns the 2.5th and 97.5th percentiles of
// the episode-weighted mean score. sums[i] is task i's total score, counts[i] its episodes.
func bootstrapCI(sums, counts []float64) [2]float64 {
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	means := make([]float64, BootstrapResamples)
	n := len(sums)
	for b := range means {
		var total, episodes float64
		for range n {
			i := rng.IntN(n)
			total += sums[i]
			episodes += counts[i]
		}
		if episodes > 0 {
			means[b] = total / episodes
		}
	}
	slices.Sort(means)
	return [2]float64{percentile(means, 0.025), percentile(means, 0.975)}
}

// percentile interpolates linearly between the closest ranks of sorted values.
func percentile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	lo := int(pos)
	if lo+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(lo)
	return sorted[lo] + frac*(sorted[lo+1]-sorted[lo])
}
