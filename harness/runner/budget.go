package runner

import (
	"errors"
	"fmt"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// ErrBudget marks a run stopped by its budget (Config.MaxCost): it started no more episodes
// once the spend plus a projection of the running ones would pass the budget, and stopped the
// running ones (grader.StatusCostLimit) when the spend reached it.
var ErrBudget = errors.New("the budget is spent")

// budget decides whether one more episode may start, while the spend so far plus a projection
// of every running episode, the new one included, stays within max, and tells when the spend
// reaches max. The spend is the ledger's (runfolder.SpendFile): every call of every episode,
// those of earlier attempts and of running episodes included, so the budget, the ledger and
// the reports count the same dollars. An episode is projected at the mean cost of the ended
// attempts with a cost, else at prior (the published cost a task, when known), or at what it
// has spent when that is more.
type budget struct {
	max, prior float64
	spent      float64 // every call's cost so far, the running episodes' included
	// ended and costed are the cost of the ended attempts with one, and how many they are.
	ended  float64
	costed int
	// running holds what each running episode's calls have cost so far.
	running map[runfolder.Episode]float64
}

// newBudget starts from what the folder spent before (its ledger's known cost: a resume spends
// on top of it) and the earlier results' costs (the projection's mean); max 0 means no budget.
func newBudget(max, prior, spent float64, done map[runfolder.Episode]runfolder.Result) *budget {
	b := &budget{max: max, prior: prior, spent: spent, running: map[runfolder.Episode]float64{}}
	for _, r := range done {
		b.count(r)
	}
	return b
}

// admit starts the episode e, or says why not (ErrBudget).
func (b *budget) admit(e runfolder.Episode) error {
	if b.max > 0 {
		per := b.perEpisode()
		projected := b.spent + per
		for _, usd := range b.running {
			projected += max(per-usd, 0)
		}
		if projected > b.max {
			return fmt.Errorf("%w: $%.2f spent, and %s would take it to about $%.2f, over the budget of $%.2f",
				ErrBudget, b.spent, english.Count(len(b.running)+1, "running episode"), projected, b.max)
		}
	}
	b.running[e] = 0
	return nil
}

// charge counts usd more spent by the running episode e, and says, once the spend reaches the
// budget, that the running episodes must stop (ErrBudget).
func (b *budget) charge(e runfolder.Episode, usd float64) error {
	b.running[e] += usd
	b.spent += usd
	if b.max > 0 && b.spent >= b.max {
		return fmt.Errorf("%w: $%.2f spent, at the budget of $%.2f, so the running episodes were stopped (%s)",
			ErrBudget, b.spent, b.max, grader.StatusCostLimit)
	}
	return nil
}

// end counts an episode that ended, and what it cost, in the projection; its calls are spent
// already.
func (b *budget) end(r runfolder.Result) {
	delete(b.running, r.Episode())
	b.count(r)
}

func (b *budget) count(r runfolder.Result) {
	if r.CostUSD != nil {
		b.ended += *r.CostUSD
		b.costed++
	}
}

// perEpisode is what an episode is projected to cost.
func (b *budget) perEpisode() float64 {
	if b.costed > 0 {
		return b.ended / float64(b.costed)
	}
	return b.prior
}
