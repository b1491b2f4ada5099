package analysis

import (
	"math"

	"github.com/aa-grade/aa-grade/grader"
)

// NTAMParams are the parameters of the ITBench papers' Normalized Topology-Aware Match, with
// the defaults of its one public implementation (SREGym's LocalizationOracle.ntam_score,
// commit 10e0f046): alpha weighs a node, omega shrinks the weight of each later answer,
// tau shrinks credit per edge of distance, gamma penalises a length mismatch.
type NTAMParams struct {
	Alpha, Omega, Tau, Gamma float64
}

// DefaultNTAM are SREGym's defaults.
var DefaultNTAM = NTAMParams{Alpha: 1, Omega: 0.7, Tau: 0.8, Gamma: 1}

// NTAM scores predictions as SREGym's function does, on the task's fault graph (its nodes the
// scoring sets, docs/analysis.md), the ground truth being the root-cause sets:
//
//   - the i-th prediction (from 0) that maps to a root-cause set earns alpha * omega^i;
//   - one that maps to another set reachable from a root cause earns alpha * subtree * tau^d,
//     d the edges to the nearest root cause and subtree = (ln((E+1)/(deg+1)) + 1) /
//     (ln(E+1) + 1), E the graph's edges and deg the set's neighbours (no omega^i here, as in
//     SREGym);
//   - one that maps to no set, or to one no root cause reaches, earns nothing;
//
// the sum is divided by the most R root causes can earn (alpha * sum of omega^i, i < R),
// capped at 1, and multiplied by exp(-gamma * |N - R|) for N predictions.
func (k *Key) NTAM(predictions []grader.Prediction, p NTAMParams) float64 {
	if len(k.roots) == 0 {
		return 0
	}
	var score float64
	for i, pred := range predictions {
		set := -1
		if pred.Group != nil {
			set = k.setOfID(*pred.Group)
		}
		switch {
		case set < 0:
		case k.gt.IsRootSet(set):
			score += p.Alpha * math.Pow(p.Omega, float64(i))
		default:
			if d := k.nearestRoot(set); d >= 0 {
				edges := float64(k.edges)
				subtree := (math.Log((edges+1)/float64(len(k.adj[set])+1)) + 1) / (math.Log(edges+1) + 1)
				score += p.Alpha * subtree * math.Pow(p.Tau, float64(d))
			}
		}
	}
	var most float64
	for i := range k.roots {
		most += p.Alpha * math.Pow(p.Omega, float64(i))
	}
	score = min(1, score/most)
	return score * math.Exp(-p.Gamma*math.Abs(float64(len(predictions)-len(k.roots))))
}

// nearestRoot is the edges from set to the nearest root cause, -1 when none reaches it.
func (k *Key) nearestRoot(set int) int {
	best := -1
	for r := range k.roots {
		if d := k.dist[r][set]; d >= 0 && (best < 0 || d < best) {
			best = d
		}
	}
	return best
}
