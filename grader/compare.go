package grader

import (
	"math"
	"math/rand/v2"
	"slices"
)

// Comparison is run B against run A, paired by task: the runs' scores on the same tasks are
// not independent (a hard task is hard for both), so the difference is taken task by task,
// over the tasks both graded, each task's score the mean of the repeats both have.
type Comparison struct {
	Tasks int `json:"tasks"` // tasks both runs graded
	// Repeats are the repeats compared per task: those both runs have of it, at most.
	Repeats int `json:"repeats"`
	// Difference is the mean over the shared tasks of B's task score minus A's.
	Difference float64 `json:"difference"`
	// CI95 is a 95% interval of Difference by a percentile bootstrap over the shared tasks
	// (BootstrapResamples, seeded); nil with fewer than MinTasksForInterval tasks.
	CI95 *[2]float64 `json:"ci95"`
	// PValue is the two-sided p-value of a paired permutation (sign-flip) test of "no
	// difference": exact over all 2^n sign patterns up to ExactPermutationTasks tasks, else
	// PermutationSamples random patterns, seeded. Nil with fewer than MinTasksForInterval tasks.
	PValue *float64 `json:"p_value"`
	// OnlyA and OnlyB are the tasks one run graded and the other did not: left out.
	OnlyA []string `json:"only_a,omitempty"`
	OnlyB []string `json:"only_b,omitempty"`
	// UnevenRepeats lists the shared tasks whose runs have different repeats (only the repeats
	// both have are compared).
	UnevenRepeats []string `json:"uneven_repeats,omitempty"`
}

// MinTasksForInterval is the fewest tasks over which a bootstrap interval or a permutation
// test is given: with fewer, the bootstrap's interval is far too narrow (over 1 task it is a
// single point, over 2 it holds the true mean in well under 95% of cases) and the smallest
// p-value a sign-flip test can reach is 2/2^n, 0.0625 at 5 tasks. Below it they are n/a.
const MinTasksForInterval = 5

// ExactPermutationTasks is the most tasks whose sign patterns are all enumerated (2^20, about
// a million, in tens of milliseconds); PermutationSamples is how many random patterns are
// drawn above it (a p-value of 0.05 then within 0.002).
const (
	ExactPermutationTasks = 20
	PermutationSamples    = 100000
)

// Compare pairs the tasks of b with those of a by id.
func Compare(a, b []TaskResult) Comparison {
	byTask := map[string]TaskResult{}
	for _, t := range a {
		byTask[t.Task] = t
	}
	var c Comparison
	var diffs []float64
	inB := map[string]bool{}
	for _, tb := range b {
		inB[tb.Task] = true
		ta, ok := byTask[tb.Task]
		if !ok {
			c.OnlyB = append(c.OnlyB, tb.Task)
			continue
		}
		sa, sb, n, uneven := sharedRepeatMeans(ta, tb)
		if n == 0 {
			continue // neither has a repeat the other has: nothing to pair
		}
		if uneven {
			c.UnevenRepeats = append(c.UnevenRepeats, tb.Task)
		}
		c.Repeats = max(c.Repeats, n)
		diffs = append(diffs, sb-sa)
	}
	for _, t := range a {
		if !inB[t.Task] {
			c.OnlyA = append(c.OnlyA, t.Task)
		}
	}
	c.Tasks = len(diffs)
	if c.Tasks == 0 {
		return c
	}
	c.Difference = mean(diffs)
	if c.Tasks >= MinTasksForInterval {
		ci := bootstrapMeanCI(diffs)
		p := signFlipPValue(diffs)
		c.CI95, c.PValue = &ci, &p
	}
	return c
}

// sharedRepeatMeans is each run's mean score over the repeats both have of a task, how many
// those are, and whether either has repeats the other lacks.
func sharedRepeatMeans(a, b TaskResult) (float64, float64, int, bool) {
	scoreOf := map[int]float64{}
	for _, e := range a.Episodes {
		scoreOf[e.Repeat] = e.Score
	}
	var sa, sb float64
	n := 0
	for _, e := range b.Episodes {
		if s, ok := scoreOf[e.Repeat]; ok {
			sa += s
			sb += e.Score
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0, len(a.Episodes)+len(b.Episodes) > 0
	}
	return sa / float64(n), sb / float64(n), n, n != len(a.Episodes) || n != len(b.Episodes)
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// bootstrapMeanCI resamples the values with replacement and returns the 2.5th and 97.5th
// percentiles of their mean.
func bootstrapMeanCI(xs []float64) [2]float64 {
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed))
	means := make([]float64, BootstrapResamples)
	for b := range means {
		var s float64
		for range xs {
			s += xs[rng.IntN(len(xs))]
		}
		means[b] = s / float64(len(xs))
	}
	slices.Sort(means)
	return [2]float64{percentile(means, 0.025), percentile(means, 0.975)}
}

// signFlipPValue is the share of sign patterns whose mean is at least as far from 0 as the
// observed mean: under "no difference" each task's difference is as likely negated.
func signFlipPValue(diffs []float64) float64 {
	observed := math.Abs(mean(diffs))
	// A tolerance keeps patterns equal to the observed mean, up to rounding, counted.
	const eps = 1e-12
	n := len(diffs)
	if n <= ExactPermutationTasks {
		extreme := 0
		for pattern := range 1 << n {
			if math.Abs(flippedMean(diffs, func(i int) bool { return pattern>>i&1 == 1 })) >= observed-eps {
				extreme++
			}
		}
		return float64(extreme) / float64(int(1)<<n)
	}
	rng := rand.New(rand.NewPCG(BootstrapSeed, BootstrapSeed+1))
	extreme := 0
	for range PermutationSamples {
		if math.Abs(flippedMean(diffs, func(int) bool { return rng.IntN(2) == 1 })) >= observed-eps {
			extreme++
		}
	}
	// Counting the observed pattern itself keeps a sampled p-value from being 0.
	return float64(extreme+1) / float64(PermutationSamples+1)
}

// flippedMean is the mean of diffs with the ones flip says negated.
func flippedMean(diffs []float64, flip func(i int) bool) float64 {
	var s float64
	for i, d := range diffs {
		if flip(i) {
			s -= d
		} else {
			s += d
		}
	}
	return s / float64(len(diffs))
}
