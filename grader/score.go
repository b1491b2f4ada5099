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

// Score grades submitted entity names with recall-gated precision: entities that map to a
// root-cause scoring set are true positives, all others false positives; the score is 0 when
// any root-cause set is missed or nothing was submitted, else TP/(TP+FP). Blank names are
// ignored and identical entities (after normalisation, see Entity.Key) count once.
func (gt *GroundTruth) Score(names []string) EpisodeScore {
	s := EpisodeScore{RootCauses: gt.RootCauseSets(), Predictions: []Prediction{}}
	seen := map[string]bool{}
	hit := make([]bool, gt.setCount)
	for _, raw := range names {
		e := ParseEntity(raw)
		if !e.Parsed && e.Name == "" {
			continue // blank
		}
		if seen[e.Key()] {
			continue
		}
		seen[e.Key()] = true
		p := Prediction{Entity: raw}
		if i := gt.MatchGroup(e); i >= 0 {
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
