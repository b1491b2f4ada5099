package baseline

import (
	"encoding/json"
	"fmt"
	"strings"
)

// finding is what the investigation prints: candidate root causes ranked by evidence, and
// the services where the failure seems to start.
type finding struct {
	Candidates []candidate       `json:"candidates"`
	Suspects   map[string]string `json:"suspects"`
}

type candidate struct {
	Entity string   `json:"entity"`
	Score  float64  `json:"score"`
	Why    []string `json:"why"`
}

// Selection of the answer: every candidate within this share of the best one's evidence,
// at most maxAnswers (two independent faults give two strong candidates).
const (
	closeToBest = 0.75
	maxAnswers  = 3
)

// parseFinding reads the investigation's JSON from the stdout of its shell result.
func parseFinding(result string) (*finding, error) {
	_, rest, ok := strings.Cut(result, "<stdout>")
	out, _, ok2 := strings.Cut(rest, "</stdout>")
	if !ok || !ok2 {
		return nil, fmt.Errorf("no output: %.300s", result)
	}
	return parseOutput(out)
}

// parseOutput reads the investigation's JSON from its stdout.
func parseOutput(out string) (*finding, error) {
	var f finding
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &f); err != nil {
		return nil, fmt.Errorf("unreadable output: %v: %.300s", err, out)
	}
	return &f, nil
}

// Factor is one entity of the baseline's answer, with why it chose it.
type Factor struct {
	Entity string
	Why    string
}

// Diagnose is the answer the baseline gives after an investigation that printed stdout (the
// output of InvestigationCommand run in a task's sandbox): what tasks validate --difficulty
// asks of it without the episode loop.
func Diagnose(stdout string) ([]Factor, error) {
	f, err := parseOutput(stdout)
	if err != nil {
		return nil, fmt.Errorf("the baseline's investigation: %w", err)
	}
	var out []Factor
	for _, c := range f.answer() {
		out = append(out, Factor{Entity: c.Entity, Why: strings.Join(c.Why, "; ")})
	}
	return out, nil
}

// answer picks the entities to submit: the best candidates.
func (f *finding) answer() []candidate {
	var out []candidate
	for _, c := range f.Candidates {
		if len(out) == maxAnswers || len(out) > 0 && c.Score < closeToBest*out[0].Score {
			break
		}
		out = append(out, c)
	}
	return out
}

// diagnosis is agent_output.json for the chosen candidates.
func diagnosis(chosen []candidate) string {
	type factor struct {
		Name      string `json:"name"`
		Reasoning string `json:"reasoning"`
		Evidence  string `json:"evidence"`
	}
	out := struct {
		ContributingFactors []factor `json:"contributing_factors"`
	}{ContributingFactors: []factor{}}
	for _, c := range chosen {
		out.ContributingFactors = append(out.ContributingFactors, factor{Name: c.Entity, Reasoning: strings.Join(c.Why, "; "),
			Evidence: fmt.Sprintf(
				"baseline investigation of alerts, events, object dumps, logs, traces and metrics: evidence score %.1f", c.Score)})
	}
	b, _ := json.Marshal(out)
	return string(b)
}
