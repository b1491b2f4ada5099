package main

import (
	"fmt"
	"math"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// tokenEstimate is the estimate of episodes at prices when no published cost a task applies,
// saying where its tokens come from: on a resume, the mean tokens of the episodes prev holds
// (the run's own); else the preset of the nearest prices with a published cost a task, whose
// cost is scaled by the ratio of the prices (a range from the input prices' ratio to the
// output prices', as the leaderboard publishes no split of its tokens). "" when neither is
// there.
func tokenEstimate(prices model.Prices, episodes int, prev *runfolder.Run) string {
	if mean, n := meanUsage(prev); n > 0 {
		total := *prices.Cost(mean) * float64(episodes)
		return fmt.Sprintf(
			"estimate: about $%.2f for %s at your prices x the mean tokens of the %s already in the folder (%s input, %s "+
				"output an episode)", total, english.Count(episodes, "episode"), english.Count(n, "episode"),
			english.Number(mean.Input), english.Number(mean.Output))
	}
	p, perTask, ok := nearestPricedPreset(prices)
	if !ok {
		return ""
	}
	e := prices.Effective()
	low, high := e.Input/p.Prices.Input, e.Output/p.Prices.Output
	low, high = min(low, high), max(low, high)
	n := float64(episodes)
	amount := fmt.Sprintf("$%.2f-$%.2f", low*perTask*n, high*perTask*n)
	if fmt.Sprintf("%.2f", low*perTask*n) == fmt.Sprintf("%.2f", high*perTask*n) {
		amount = fmt.Sprintf("$%.2f", low*perTask*n)
	}
	return fmt.Sprintf(
		"estimate: about %s for %s at your prices x the tokens a task of %s, the preset of the nearest prices (its "+
			"published $%.2f a task at $%g/$%g per million input/output; the range is the split of its tokens, not published)",
		amount, english.Count(episodes, "episode"), p.Label, perTask, p.Prices.Input, p.Prices.Output)
}

// meanUsage is the mean usage of the finished episodes of prev (nil: none) that report
// tokens, and how many they are.
func meanUsage(prev *runfolder.Run) (model.Usage, int) {
	if prev == nil {
		return model.Usage{}, 0
	}
	var sum model.Usage
	n := 0
	for _, r := range prev.Results {
		if r.Final() && r.Tokens.Input+r.Tokens.Output > 0 {
			sum.Add(r.Tokens)
			n++
		}
	}
	if n == 0 {
		return sum, 0
	}
	div := func(v int64) int64 { return v / int64(n) }
	return model.Usage{Input: div(sum.Input), CachedRead: div(sum.CachedRead), CachedWrite: div(sum.CachedWrite),
		Output: div(sum.Output), Reasoning: div(sum.Reasoning)}, n
}

// nearestPricedPreset is the preset, of those with prices and a published cost a task, whose
// prices are nearest to prices (the sum of the distances of the logarithms of the input and
// output prices), and its published cost a task.
func nearestPricedPreset(prices model.Prices) (provider.Preset, float64, bool) {
	var best provider.Preset
	bestCost, bestDistance := 0.0, math.Inf(1)
	logDistance := func(a, b float64) float64 { return math.Abs(math.Log((a + 0.01) / (b + 0.01))) }
	for _, p := range provider.Presets {
		cost := publishedCost(p.Name)
		if p.Prices == nil || cost == nil || p.Prices.Input <= 0 || p.Prices.Output <= 0 {
			continue
		}
		if d := logDistance(prices.Input, p.Prices.Input) + logDistance(prices.Output, p.Prices.Output); d < bestDistance {
			best, bestCost, bestDistance = p, *cost, d
		}
	}
	return best, bestCost, !math.IsInf(bestDistance, 1)
}
