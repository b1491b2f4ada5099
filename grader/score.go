package grader

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
// dropped, and of identical entities (Entity.Key) only the first.
func DistinctEntities(names []string) []string {
	entities := distinctEntities(names)
	out := make([]string, len(entities))
	for i, e := range entities {
		out[i] = e.Raw
	}
	return out
}

func distinctEntities(names []string) []Entity {
	var out []Entity
	seen := map[string]bool{}
	for _, raw := range names {
		e := ParseEntity(raw)
		if (!e.Parsed && e.Name == "") || seen[e.Key()] {
			continue // blank, or counted already
		}
		seen[e.Key()] = true
		out = append(out, e)
	}
	return out
}

// scoreWith grades the distinct entities of names, groupOf giving each one's group index (-1
// for none).
func (gt *GroundTruth) scoreWith(names []string, groupOf func(Entity) int) EpisodeScore {
	s := EpisodeScore{RootCauses: gt.RootCauseSets(), Predictions: []Prediction{}}
	hit := make([]bool, gt.setCount)
	for _, e := range distinctEntities(names) {
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
