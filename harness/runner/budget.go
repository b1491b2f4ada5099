package runner

import (
	"errors"
	"fmt"

	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// ErrBudget marks a run that stopped starting episodes because the spend plus a projection of
// the running ones would pass its budget (Config.MaxCost).
var ErrBudget = errors.New("the budget is spent")

// budget decides whether one more episode may start: while the spend so far plus a projection
// of every running episode, the new one included, stays within max. An episode is projected at
// the mean cost of the results with a cost, else at prior (the published cost a task, when
// known): a running episode is not stopped, so the projection keeps room for it.
type budget struct {
	max, prior float64
	spent      float64 // the recorded results' cost
	costed     int     // the recorded results with a cost
	running    int
}

// newBudget counts what the folder's earlier results spent (a resume spends on top of them);
// max 0 means no budget.
func newBudget(max, prior float64, done map[runfolder.Episode]runfolder.Result) *budget {
	b := &budget{max: max, prior: prior}
	for _, r := range done {
		b.add(r)
	}
	return b
}

// admit starts one more episode, or says why not (ErrBudget).
func (b *budget) admit() error {
	if b.max > 0 {
		if projected := b.spent + float64(b.running+1)*b.perEpisode(); projected > b.max {
			return fmt.Errorf("%w: $%.2f spent, and %s would take it to about $%.2f, over the budget of $%.2f",
				ErrBudget, b.spent, english.Count(b.running+1, "running episode"), projected, b.max)
		}
	}
	b.running++
	return nil
}

// ended counts an episode that ended, and what it cost.
func (b *budget) ended(r runfolder.Result) {
	b.running--
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
