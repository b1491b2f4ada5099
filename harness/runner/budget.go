package runner

import (
	"errors"
	"fmt"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// ErrBudget marks a run stopped by its budget (Config.MaxCost): it started no more episodes
// once the spend plus a projection of the running ones would pass the budget, and stopped the
// running ones (grader.StatusCostLimit) when the spend reached it.
var ErrBudget = errors.New("the budget is spent")

// budget decides whether one more episode may start, while the spend so far plus a projection
// of every running episode, the new one included, stays within max, and tells when the spend,
// running episodes' calls included, reaches max. An episode is projected at the mean cost of
// the results with a cost, else at prior (the published cost a task, when known), or at what
// it has spent when that is more.
type budget struct {
	max, prior float64
	spent      float64 // the recorded results' cost
	costed     int     // the recorded results with a cost
	// running holds what each running episode's calls have cost so far.
	running map[runfolder.Episode]float64
}

// newBudget counts what the folder's earlier results spent (a resume spends on top of them);
// max 0 means no budget.
func newBudget(max, prior float64, done map[runfolder.Episode]runfolder.Result) *budget {
	b := &budget{max: max, prior: prior, running: map[runfolder.Episode]float64{}}
	for _, r := range done {
		b.add(r)
	}
	return b
}

// admit starts the episode e, or says why not (ErrBudget).
func (b *budget) admit(e runfolder.Episode) error {
	if b.max > 0 {
		projected := b.spent + b.perEpisode()
		for _, usd := range b.running {
			projected += max(usd, b.perEpisode())
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
	if b.max <= 0 {
		return nil
	}
	if now := b.now(); now >= b.max {
		return fmt.Errorf("%w: $%.2f spent, at the budget of $%.2f, so the running episodes were stopped (%s)",
			ErrBudget, now, b.max, grader.StatusCostLimit)
	}
	return nil
}

// now is the spend, running episodes' calls included.
func (b *budget) now() float64 {
	total := b.spent
	for _, usd := range b.running {
		total += usd
	}
	return total
}

// ended counts an episode that ended, and what it cost.
func (b *budget) ended(r runfolder.Result) {
	delete(b.running, r.Episode())
	b.add(r)
}

func (b *budget) add(r runfolder.Result) {
	if r.CostUSD != nil {
		b.spent += *r.CostUSD
		b.costed++
	}
}

// perEpisode is what an episode is projected to cost.
func (b *budget) perEpisode() float64 {
	if b.costed > 0 {
		return b.spent / float64(b.costed)
	}
	return b.prior
}
