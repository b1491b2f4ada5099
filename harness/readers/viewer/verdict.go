package viewer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strings"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/jsonguard"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Submission is an episode's agent_output.json and how each entity it names was graded.
type Submission struct {
	Raw      string // the file as shown (see shownSubmission)
	Invalid  string // why it cannot be read as a diagnosis
	Entities []Entity
	// Dropped says how many entities past grader.MaxEntities were not graded ("" for none).
	Dropped string
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
	s := &Submission{Raw: shownSubmission(doc)}
	sub, err := grader.ReadSubmission(doc)
	if err != nil {
		s.Invalid = err.Error()
		return s, nil
	}
	if gt == nil {
		s.Unknown = gtProblem
		names, dropped := grader.DistinctEntities(sub.Names)
		for _, name := range names {
			s.Entities = append(s.Entities, Entity{Name: name})
		}
		s.Dropped = grader.DroppedNote(dropped)
		return s, nil
	}
	score := gt.Score(sub.Names)
	s.Score, s.Dropped = &score, grader.DroppedNote(score.EntitiesDropped)
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

// missedCause is a root-cause group of the ground truth that no entity of an answer matched:
// its id and what it matches.
type missedCause struct {
	ID, What string
}

// missedRootCauses names the root-cause groups whose scoring set none of the predictions hit
// (none when predictions is empty: every root cause is missed), so that a page saying "0 of 1
// root cause found" also says which.
func missedRootCauses(gt *grader.GroundTruth, predictions []grader.Prediction) []missedCause {
	hit := map[int]bool{}
	for _, p := range predictions {
		if !p.RootCause || p.Group == nil {
			continue
		}
		if i := gt.GroupIndex(*p.Group); i >= 0 {
			hit[gt.SetOf(i)] = true
		}
	}
	var out []missedCause
	for i, g := range gt.Groups {
		if g.RootCause && !hit[gt.SetOf(i)] {
			out = append(out, missedCause{ID: g.ID, What: describeGroup(g)})
		}
	}
	return out
}

// describeGroup says what a group matches: "ConfigMap otel-demo/flagd-config", or its name
// filters ("Pod otel-demo/ matching cart-.*").
func describeGroup(g grader.Group) string {
	name := g.Name
	if len(g.Filters) > 0 {
		var patterns []string
		for _, f := range g.Filters {
			patterns = append(patterns, f.Pattern)
		}
		name = "matching " + strings.Join(patterns, " or ")
		if g.Namespace != "" {
			name = " " + name
		}
	}
	return fmt.Sprintf("%s %s/%s", g.Kind, g.Namespace, name)
}

// maxShownSubmission bounds the submission a page shows as text. A real one is a few KiB; a
// file of the 4 MiB allowed, escaped and indented, made pages of tens of MB nobody reads.
const maxShownSubmission = 64 << 10

// maxIndentDepth bounds the nesting of a submission that is shown indented: each level adds
// its indentation to every line below it, so a deep document would grow many times over.
const maxIndentDepth = 16

// shownSubmission is the submission as a page shows it: indented when it is JSON that stays
// within maxShownSubmission so, else as written, cut to maxShownSubmission bytes with a note
// of what is left out.
func shownSubmission(doc []byte) string {
	if len(doc) <= maxShownSubmission && jsonguard.Shallow(doc, maxIndentDepth) {
		var indented bytes.Buffer
		if json.Indent(&indented, doc, "", "  ") == nil && indented.Len() <= maxShownSubmission {
			return indented.String()
		}
	}
	if len(doc) <= maxShownSubmission {
		return string(doc)
	}
	cut := maxShownSubmission
	for cut > 0 && !utf8.RuneStart(doc[cut]) {
		cut-- // not inside a character
	}
	return fmt.Sprintf("%s\n[... %d more bytes not shown: the whole file is %s in the episode's folder ...]", doc[:cut],
		len(doc)-cut, grader.SubmissionFile)
}
