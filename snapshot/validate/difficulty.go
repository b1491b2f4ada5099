package validate

import (
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/snapshot/synth/naive"
)

// SolvedFrom is the score from which a fault-agnostic solver is said to solve a task: its
// answer names every root cause, and as many right entities as wrong ones at least. Such a
// task measures little: frontier models score 0.3 to 0.5 on the real ones.
const SolvedFrom = 0.5

// Codes of the difficulty findings.
const (
	CodeGiveaway   = "giveaway"   // a fault-agnostic solver solves the task
	CodeDifficulty = "difficulty" // how a solver did, or that it could not run
)

// Attempt is one fault-agnostic solver's answer to a task.
type Attempt struct {
	Solver string
	Answer []naive.Answer
	Err    error
}

// SolverScore is how a solver did on a task.
type SolverScore struct {
	Solver string         `json:"solver"`
	Score  float64        `json:"score"`
	Answer []naive.Answer `json:"answer"`
	Error  string         `json:"error,omitempty"`
}

// NaiveAttempts runs the naive solvers on the task folder dir.
func NaiveAttempts(dir string) []Attempt {
	var out []Attempt
	for _, s := range naive.Solvers {
		answer, err := s.Solve(dir)
		out = append(out, Attempt{Solver: s.Name, Answer: answer, Err: err})
	}
	return out
}

// AddDifficulty scores each attempt against the task's ground truth into the report, with an
// info for each, and a warning for each solver that solves the task naming the evidence it
// keyed on for the root causes it found. A ground truth that does not parse is already an
// error of the report: nothing is scored then.
func AddDifficulty(r *Report, groundTruth []byte, attempts []Attempt) {
	gt, err := grader.ParseGroundTruth(groundTruth)
	if err != nil {
		return
	}
	for _, a := range attempts {
		s := SolverScore{Solver: a.Solver, Answer: a.Answer}
		if a.Err != nil {
			s.Error = a.Err.Error()
			r.Difficulty = append(r.Difficulty, s)
			r.Findings = append(r.Findings, Finding{Level: Warning, Code: CodeDifficulty,
				Message: fmt.Sprintf("%s could not answer: %v", a.Solver, a.Err)})
			continue
		}
		score := gt.Score(naive.Entities(a.Answer))
		s.Score = score.Score
		r.Difficulty = append(r.Difficulty, s)
		r.Findings = append(r.Findings, Finding{Level: Info, Code: CodeDifficulty,
			Message: fmt.Sprintf("%s scores %.2f (%d of %d root causes in %s)", a.Solver, score.Score,
				score.RootCausesFound, score.RootCauses, entities(len(a.Answer)))})
		if score.Score < SolvedFrom {
			continue
		}
		evidence := map[string]string{}
		for _, ans := range a.Answer {
			evidence[ans.Entity] = ans.Evidence
		}
		var keyedOn []string
		for _, p := range score.Predictions {
			if p.RootCause {
				keyedOn = append(keyedOn, p.Entity+" from "+evidence[p.Entity])
			}
		}
		r.Findings = append(r.Findings, Finding{Level: Warning, Code: CodeGiveaway,
			Message: fmt.Sprintf("%s, which knows nothing of faults, solves the task (score %.2f, from %.2f): %s", a.Solver,
				score.Score, SolvedFrom, strings.Join(keyedOn, "; "))})
	}
}

// entities counts an answer's entities: "1 entity", "2 entities".
func entities(n int) string {
	if n == 1 {
		return "1 entity"
	}
	return fmt.Sprintf("%d entities", n)
}
