package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Submission is an episode's agent_output.json and how each entity it names was graded.
type Submission struct {
	Raw      string // the file, indented when it is JSON
	Invalid  string // why it cannot be read as a diagnosis
	Entities []Entity
	// Score is the rules' grade; Decided says what graded the episode when the rules did not
	// (the judge), and Unknown why the entities could not be graded (no ground truth).
	Score   *grader.EpisodeScore
	Decided string
	Unknown string
}

// Entity is one distinct entity of a submission and its verdict.
type Entity struct {
	Name      string
	Group     string // the ground-truth group it matched, "" for none
	RootCause bool
	Why       string
}

// readSubmission reads an episode's submission and grades it with the rules against gt (nil
// when the ground truth is not known); nil when the episode has none.
func readSubmission(root *os.Root, dir string, gt *grader.GroundTruth, gtProblem string) (*Submission, error) {
	doc, err := safefile.Read(root, path.Join(dir, grader.SubmissionFile), grader.MaxSubmissionBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case errors.Is(err, safefile.ErrTooLarge):
		return &Submission{Invalid: fmt.Sprintf("larger than %d MiB", grader.MaxSubmissionBytes>>20)}, nil
	case err != nil:
		return nil, fmt.Errorf("read the submission: %w", err)
	}
	s := &Submission{Raw: string(doc)}
	var indented bytes.Buffer
	if json.Indent(&indented, doc, "", "  ") == nil {
		s.Raw = indented.String()
	}
	sub, err := grader.ReadSubmission(doc)
	if err != nil {
		s.Invalid = err.Error()
		return s, nil
	}
	if gt == nil {
		s.Unknown = gtProblem
		for _, name := range grader.DistinctEntities(sub.Names) {
			s.Entities = append(s.Entities, Entity{Name: name})
		}
		return s, nil
	}
	score := gt.Score(sub.Names)
	s.Score = &score
	for _, p := range score.Predictions {
		e := Entity{Name: p.Entity, RootCause: p.RootCause}
		switch {
		case p.Group == nil:
			e.Why = "matches no group of the ground truth"
		case p.RootCause:
			e.Group, e.Why = *p.Group, "matches the root-cause group "+*p.Group
		default:
			e.Group, e.Why = *p.Group, "matches group "+*p.Group+", which is not a root cause"
		}
		s.Entities = append(s.Entities, e)
	}
	return s, nil
}
