package analysis

import (
	"cmp"
	"slices"
)

// Summary sums up analysed episodes: a run's, or every run of one model.
type Summary struct {
	Episodes int `json:"episodes"`
	// Score is the mean gated score (recall-gated precision) of the episodes, PartialCredit
	// the mean partial credit beside it.
	Score         float64 `json:"score"`
	PartialCredit float64 `json:"partial_credit"`
	NTAM          float64 `json:"ntam"` // the mean NTAM

	// FalsePositives counts false positives by class, FalsePositiveShares gives each class's
	// share of them.
	FalsePositives      map[string]int     `json:"false_positives"`
	FalsePositiveShares map[string]float64 `json:"false_positive_shares"`
	// WithTrajectory counts the episodes whose trajectory was read; FirstHits those where a
	// turn named a root cause, MedianFirstHitTurn the median of those turns (null: none).
	WithTrajectory     int      `json:"with_trajectory"`
	FirstHits          int      `json:"first_hits"`
	MedianFirstHitTurn *float64 `json:"median_first_hit_turn"`
	// RelativeCoveredServices and DetouredServices are the episodes' means, over those that
	// have them (null: none does).
	RelativeCoveredServices *float64 `json:"relative_covered_services"`
	DetouredServices        *float64 `json:"detoured_services"`
	// SourceCoverage is, for each evidence source, the share of episodes with a trajectory
	// that read it.
	SourceCoverage map[string]float64 `json:"source_coverage"`
	Commands       map[string]int     `json:"commands"`
	Failed         int                `json:"failed_commands"`
	Truncated      int                `json:"truncated_outputs"`
	Repeated       int                `json:"repeated_commands"`
	ModelSeconds   float64            `json:"model_s"`
	ToolSeconds    float64            `json:"tool_s"`
}

// Summarise sums episodes up.
func Summarise(episodes []Episode) Summary {
	s := Summary{Episodes: len(episodes), FalsePositives: map[string]int{}, FalsePositiveShares: map[string]float64{},
		SourceCoverage: map[string]float64{}, Commands: map[string]int{}}
	for _, c := range Classes {
		s.FalsePositives[c] = 0
	}
	var hits []int
	var covered, detoured []float64
	read := map[string]int{}
	for _, e := range episodes {
		s.Score += e.Score
		s.PartialCredit += e.PartialCredit
		s.NTAM += e.NTAM
		for _, fp := range e.FalsePositives {
			s.FalsePositives[fp.Class]++
		}
		if e.ModelSeconds != nil {
			s.ModelSeconds += *e.ModelSeconds
		}
		if e.ToolSeconds != nil {
			s.ToolSeconds += *e.ToolSeconds
		}
		if e.RelativeCoveredServices != nil {
			covered = append(covered, *e.RelativeCoveredServices)
		}
		if e.DetouredServices != nil {
			detoured = append(detoured, float64(*e.DetouredServices))
		}
		if !e.Trajectory {
			continue
		}
		s.WithTrajectory++
		if e.FirstHitTurn != nil {
			hits = append(hits, *e.FirstHitTurn)
		}
		for _, src := range e.SourcesRead {
			read[src]++
		}
		for k, n := range e.Commands {
			s.Commands[k] += n
		}
		s.Failed += e.Failed
		s.Truncated += e.Truncated
		s.Repeated += e.Repeated
	}
	s.RelativeCoveredServices, s.DetouredServices = meanOf(covered), meanOf(detoured)
	if s.Episodes > 0 {
		s.Score /= float64(s.Episodes)
		s.PartialCredit /= float64(s.Episodes)
		s.NTAM /= float64(s.Episodes)
	}
	fps := 0
	for _, n := range s.FalsePositives {
		fps += n
	}
	for c, n := range s.FalsePositives {
		s.FalsePositiveShares[c] = 0
		if fps > 0 {
			s.FalsePositiveShares[c] = float64(n) / float64(fps)
		}
	}
	for _, src := range Sources {
		if s.WithTrajectory > 0 {
			s.SourceCoverage[src] = float64(read[src]) / float64(s.WithTrajectory)
		}
	}
	s.FirstHits = len(hits)
	if len(hits) > 0 {
		slices.Sort(hits)
		m := float64(hits[len(hits)/2])
		if len(hits)%2 == 0 {
			m = float64(hits[len(hits)/2-1]+hits[len(hits)/2]) / 2
		}
		s.MedianFirstHitTurn = &m
	}
	return s
}

// meanOf is the mean of xs, nil for none.
func meanOf(xs []float64) *float64 {
	if len(xs) == 0 {
		return nil
	}
	var sum float64
	for _, x := range xs {
		sum += x
	}
	m := sum / float64(len(xs))
	return &m
}

// ModelSummary sums up every analysed folder of one model.
type ModelSummary struct {
	Model string `json:"model"`
	Runs  int    `json:"runs"`
	Summary
}

// ByModel sums runs up per model, in the order the models first appear; folders of
// submissions (no model) are each their own row, named by their folder.
func ByModel(runs []*Run) []ModelSummary {
	var order []string
	episodes := map[string][]Episode{}
	count := map[string]int{}
	for _, r := range runs {
		label := cmp.Or(r.Model, r.Dir)
		if _, ok := episodes[label]; !ok {
			order = append(order, label)
		}
		episodes[label] = append(episodes[label], r.Episodes...)
		count[label]++
	}
	out := make([]ModelSummary, len(order))
	for i, m := range order {
		out[i] = ModelSummary{Model: m, Runs: count[m], Summary: Summarise(episodes[m])}
	}
	return out
}
