package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
)

// SubsetNote says why a local score cannot equal a published one.
var SubsetNote = fmt.Sprintf("The published leaderboard (%s) ran %d tasks x 3 repeats; the public tasks are a subset "+
	"of those %d, so a local run estimates, but cannot equal, a published score.", leaderboard.Date, leaderboard.Tasks,
	leaderboard.Tasks)

// otherTasks says why a run of dataset's tasks is not ranked against the published
// leaderboard, "" when it is. It is ranked only when the published scores measured the same
// thing: its dataset is ITBench-AA's on the Hub (hf:ArtificialAnalysis/ITBench-AA, at any
// revision) and each of its tasks is one of that dataset's public ones. A local folder, even a
// copy of ITBench-AA, is not ranked: its ground truths cannot be told from edited ones.
func otherTasks(dataset string, tasks []string) string {
	repo, hub := strings.CutPrefix(dataset, "hf:")
	repo, _, _ = strings.Cut(repo, "@")
	if !hub || !strings.EqualFold(repo, leaderboard.Dataset) {
		return fmt.Sprintf("its dataset, %s, is not ITBench-AA's (hf:%s), whose tasks the published runs used",
			OneLine(dataset, 80), leaderboard.Dataset)
	}
	if len(tasks) == 0 {
		return "it has no task"
	}
	var foreign []string
	for _, t := range tasks {
		if !slices.Contains(leaderboard.PublicTasks, t) {
			foreign = append(foreign, t)
		}
	}
	if len(foreign) > 0 {
		return fmt.Sprintf("%d of its tasks are not among ITBench-AA's public ones (%s)", len(foreign),
			OneLine(strings.Join(foreign, ", "), 200))
	}
	return ""
}

// OtherTasksNote says why a run is left out of the published leaderboard, after its reason.
const OtherTasksNote = "its score measures other tasks than the published ones, so it is not ranked among them"

// boardRow is a run or a published entry on the leaderboard.
type boardRow struct {
	Label       string
	Run         int // index of the run, -1 for a published row
	Score       float64
	CI95        *[2]float64
	Tasks       int
	AvgTurns    *float64
	CostPerTask *float64
	// Finished and Episodes are a run's finished episodes among all of its own: a run not
	// finished is drawn as such, never as a confident score (Standing).
	Finished, Episodes int
}

func (b boardRow) Published() bool { return b.Run < 0 }

// Standing is a run's score as the leaderboards write it: with its interval once every
// episode finished; "so far", without an interval, while some have not (they count 0, so the
// score is only a floor); no score at all before any has.
func (b boardRow) Standing() string {
	switch {
	case b.Finished >= b.Episodes:
		return fmt.Sprintf("%.3f [95%% CI %s]", b.Score, grader.FormatCI(b.CI95))
	case b.Finished == 0:
		return fmt.Sprintf("no score: none of %s finished", english.Count(b.Episodes, "episode"))
	}
	return fmt.Sprintf("%.3f so far: %d of %d episodes finished, the rest counted 0", b.Score, b.Finished, b.Episodes)
}

// Unfinished says some of a run's episodes have not finished.
func (b boardRow) Unfinished() bool { return !b.Published() && b.Finished < b.Episodes }

// board puts the runs of ITBench-AA's tasks among the published rows, best score first (a
// run before a published row of the same score); with published false, the other runs alone.
// Each row keeps its run's index in runs.
func board(runs []Overview, published bool) []boardRow {
	var rows []boardRow
	for i, o := range runs {
		if (o.OtherTasks == "") != published {
			continue
		}
		turns := o.MeanTurns
		rows = append(rows, boardRow{Label: o.Model, Run: i, Score: o.Score, CI95: o.CI95, Tasks: o.Tasks,
			AvgTurns: &turns, CostPerTask: o.CostPerTask, Finished: o.Episodes - o.NotFinished(), Episodes: o.Episodes})
	}
	if !published || len(rows) == 0 {
		slices.SortStableFunc(rows, func(a, b boardRow) int { return cmp.Compare(b.Score, a.Score) })
		return rows
	}
	for _, p := range leaderboard.Published {
		rows = append(rows, boardRow{Label: p.Label, Run: -1, Score: p.Score, Tasks: leaderboard.Tasks,
			AvgTurns: p.AvgTurns, CostPerTask: p.CostPerTask})
	}
	slices.SortStableFunc(rows, func(a, b boardRow) int { return cmp.Compare(b.Score, a.Score) })
	return rows
}

// FormatUSD writes a cost, or "unknown" when prices are unknown (runfolder.FormatUSD).
func FormatUSD(v *float64) string { return runfolder.FormatUSD(v) }

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
