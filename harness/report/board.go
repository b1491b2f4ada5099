package report

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// SubsetNote says why a local score cannot equal a published one.
var SubsetNote = fmt.Sprintf("The published leaderboard (%s) ran %d tasks x 3 repeats; the public tasks are a subset "+
	"of those %d, so a local run estimates, but cannot equal, a published score.", leaderboard.Date, leaderboard.Tasks, leaderboard.Tasks)

// boardRow is a run or a published entry on the leaderboard.
type boardRow struct {
	Label       string
	Run         int // index of the run, -1 for a published row
	Score       float64
	CI95        *[2]float64
	Tasks       int
	AvgTurns    *float64
	CostPerTask *float64
}

func (b boardRow) Published() bool { return b.Run < 0 }

// board puts the runs among the published rows, best score first (a run before a published
// row of the same score).
func board(runs []Overview) []boardRow {
	var rows []boardRow
	for i, o := range runs {
		turns := o.MeanTurns
		rows = append(rows, boardRow{Label: o.Model, Run: i, Score: o.Score, CI95: o.CI95, Tasks: o.Tasks,
			AvgTurns: &turns, CostPerTask: o.CostPerTask})
	}
	for _, p := range leaderboard.Published {
		rows = append(rows, boardRow{Label: p.Label, Run: -1, Score: p.Score, Tasks: leaderboard.Tasks,
			AvgTurns: p.AvgTurns, CostPerTask: p.CostPerTask})
	}
	slices.SortStableFunc(rows, func(a, b boardRow) int { return cmp.Compare(b.Score, a.Score) })
	return rows
}

// FormatUSD writes a cost, or "unknown" when prices are unknown.
func FormatUSD(v *float64) string {
	switch {
	case v == nil:
		return "unknown"
	case *v == 0:
		return "$0"
	case *v < 1:
		return fmt.Sprintf("$%.3f", *v)
	default:
		return fmt.Sprintf("$%.2f", *v)
	}
}

// formatOptional writes a published figure, or a dash when it was not published.
func formatOptional(v *float64, format string) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf(format, *v)
}

// OneLine makes untrusted text fit one line of a terminal or a table: line breaks become
// spaces, escape sequences and other controls go (termtext.Sanitize), and it is cut to at
// most limit runes.
func OneLine(s string, limit int) string {
	s = termtext.Sanitize(s)
	if r := []rune(s); len(r) > limit {
		return string(r[:limit-1]) + "…"
	}
	return s
}
