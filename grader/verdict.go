package grader

import "context"

// Matchers: who mapped the entities of a graded episode to ground-truth groups.
const (
	MatcherRules = "rules" // the deterministic rules (match.go)
	MatcherJudge = "judge" // an LLM judge (grader/judge), as in the official grading
)

// Verdict is how one submission was graded: its score, the matcher that decided it, and, when
// a judge decided, the rules' grade beside it.
type Verdict struct {
	EpisodeScore
	Matcher string `json:"matcher,omitempty"`
	// JudgeNote says why the judge did not decide (its call failed and the rules graded), or
	// which parts of its reply were ignored.
	JudgeNote string `json:"judge_note,omitempty"`
	// Rules is the rules' grade of an episode the judge decided, to measure their agreement.
	Rules *RulesGrade `json:"rules,omitempty"`
}

// RulesGrade is the deterministic rules' grade of an episode a judge decided.
type RulesGrade struct {
	Score           float64 `json:"score"`
	TP              int     `json:"tp"`
	FP              int     `json:"fp"`
	RootCausesFound int     `json:"root_causes_found"`
	// Agreed counts the entities the rules map to the same scoring set as the judge (aliases
	// are one set), or, like it, to none; Disagreed names the others.
	Agreed    int      `json:"agreed"`
	Disagreed []string `json:"disagreed,omitempty"`
}

// Scorer grades the submitted names of one episode of a task. The error is only ever the
// context's: a scorer that cannot decide otherwise falls back to the rules with a note.
type Scorer func(ctx context.Context, task Task, gt *GroundTruth, names []string) (Verdict, error)

// Rules is the Scorer of the deterministic rules.
func Rules(_ context.Context, _ Task, gt *GroundTruth, names []string) (Verdict, error) {
	return gt.RulesVerdict(names, ""), nil
}

// RulesVerdict grades names with the rules; note says why a judge did not decide, if one was
// asked.
func (gt *GroundTruth) RulesVerdict(names []string, note string) Verdict {
	return Verdict{EpisodeScore: gt.Score(names), Matcher: MatcherRules, JudgeNote: note}
}

// JudgeVerdict grades names with a judge's mapping (see ScoreMapping) and keeps the rules'
// grade beside it.
func (gt *GroundTruth) JudgeVerdict(names []string, mapping map[string]string, note string) Verdict {
	judged, rules := gt.ScoreMapping(names, mapping), gt.Score(names)
	r := &RulesGrade{Score: rules.Score, TP: rules.TP, FP: rules.FP, RootCausesFound: rules.RootCausesFound}
	for i, p := range judged.Predictions { // both list the same distinct entities in order
		if gt.setOfGroup(p.Group) == gt.setOfGroup(rules.Predictions[i].Group) {
			r.Agreed++
		} else {
			r.Disagreed = append(r.Disagreed, p.Entity)
		}
	}
	return Verdict{EpisodeScore: judged, Matcher: MatcherJudge, JudgeNote: note, Rules: r}
}

// setOfGroup returns the scoring set of a predicted group id, -1 for none.
func (gt *GroundTruth) setOfGroup(id *string) int {
	if id == nil {
		return -1
	}
	if i := gt.groupIndex(*id); i >= 0 {
		return gt.setOf[i]
	}
	return -1
}
