package grader

import "fmt"

// Prediction is one distinct submitted entity and the group it mapped to.
type Prediction struct {
	Entity    string  `json:"entity"`
	Group     *string `json:"group"` // null when the entity matches no group
	RootCause bool    `json:"root_cause"`
}

// EpisodeScore is the grade of one (task, repeat) submission.
type EpisodeScore struct {
	Score           float64      `json:"score"`
	TP              int          `json:"tp"`
	FP              int          `json:"fp"`
	RootCauses      int          `json:"root_causes"`
	RootCausesFound int          `json:"root_causes_found"`
	Predictions     []Prediction `json:"predictions"`
	// EntitiesDropped counts the distinct entities past the first MaxEntities: not matched,
	// not listed in Predictions, and counted in FP.
	EntitiesDropped int `json:"entities_dropped,omitempty"`
}

// MaxEntities bounds the distinct entities of one submission that are graded. A diagnosis
// names its root causes and a few suspects (IBM's agents name about six; the reference prompt
// asks for the root causes); 200 is far above that and near the count of objects in a whole
// snapshot. Past it, grading would cost without telling anything: one answer of 250,000 names
// made a 6 MB report.md and a 41 MB viewer page, and would all go to the LLM judge. The first
// MaxEntities distinct entities, in the submission's order, are graded; the others are counted
// as false positives without being matched (so the precision is over everything submitted,
// and the score is never above what grading them all would give), and reported as
// EntitiesDropped.
const MaxEntities = 200

// DroppedNote says, for the reports, what became of the n entities of a submission past
// MaxEntities; "" when there were none.
func DroppedNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("%d more distinct entities past the first %d were not graded: each counts as a false positive", n,
		MaxEntities)
}

// FullRecall reports whether every root-cause set was hit.
func (s EpisodeScore) FullRecall() bool {
	return s.RootCauses > 0 && s.RootCausesFound == s.RootCauses
}

// Score grades submitted entity names with recall-gated precision, the deterministic rules
// (match.go) mapping each entity to a group: entities that map to a root-cause scoring set are
// true positives, all others false positives; the score is 0 when any root-cause set is missed
// or nothing was submitted, else TP/(TP+FP). Blank names are ignored and identical entities
// (after normalisation, see Entity.Key) count once.
func (gt *GroundTruth) Score(names []string) EpisodeScore {
	return gt.scoreWith(names, gt.MatchGroup)
}

// ScoreMapping grades submitted entity names as Score does, with the mapping of entities to
// groups decided elsewhere (by the LLM judge): mapping holds the group id of each entity, keyed
// by the names DistinctEntities returns. An entity absent from the mapping, or mapped to an id
// the ground truth lacks, matches nothing.
func (gt *GroundTruth) ScoreMapping(names []string, mapping map[string]string) EpisodeScore {
	return gt.scoreWith(names, func(e Entity) int { return gt.groupIndex(mapping[e.Raw]) })
}

// DistinctEntities returns the names a submission is graded on, in order: blank names
// dropped, of identical entities (Entity.Key) only the first, and at most MaxEntities; and
// how many distinct entities come past those.
func DistinctEntities(names []string) ([]string, int) {
	entities, dropped := distinctEntities(names)
	out := make([]string, len(entities))
	for i, e := range entities {
		out[i] = e.Raw
	}
	return out, dropped
}

// distinctEntities returns the first MaxEntities distinct entities of names and how many
// distinct ones come after them.
func distinctEntities(names []string) ([]Entity, int) {
	var out []Entity
	dropped := 0
	seen := map[string]bool{}
	for _, raw := range names {
		e := ParseEntity(raw)
		if (!e.Parsed && e.Name == "") || seen[e.Key()] {
			continue // blank, or counted already
		}
		seen[e.Key()] = true
		if len(out) == MaxEntities {
			dropped++
			continue
		}
		out = append(out, e)
	}
	return out, dropped
}

// scoreWith grades the distinct entities of names, groupOf giving each one's group index (-1
// for none).
func (gt *GroundTruth) scoreWith(names []string, groupOf func(Entity) int) EpisodeScore {
	s := EpisodeScore{RootCauses: gt.RootCauseSets(), Predictions: []Prediction{}}
	hit := make([]bool, gt.setCount)
	entities, dropped := distinctEntities(names)
	s.EntitiesDropped, s.FP = dropped, dropped
	for _, e := range entities {
		p := Prediction{Entity: e.Raw}
		if i := groupOf(e); i >= 0 {
			id := gt.Groups[i].ID
			set := gt.setOf[i]
			p.Group, p.RootCause = &id, gt.rootSets[set]
			if p.RootCause {
				hit[set] = true
			}
		}
		if p.RootCause {
			s.TP++
		} else {
			s.FP++
		}
		s.Predictions = append(s.Predictions, p)
	}
	for set, h := range hit {
		if h && gt.rootSets[set] {
			s.RootCausesFound++
		}
	}
	if s.TP+s.FP > 0 && s.FullRecall() {
		s.Score = float64(s.TP) / float64(s.TP+s.FP)
	}
	return s
}
