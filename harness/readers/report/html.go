package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/termtext"
	"github.com/aa-grade/aa-grade/internal/version"
)

//go:embed report.html.tmpl
var pageSource string

// page is report.html: html/template escapes every value from a run folder in its context,
// and the page loads nothing (its Content-Security-Policy forbids it too).
var page = parsePage("report.html", pageSource)

// palette colours the runs (Tableau 10, readable on white); runs beyond it reuse it.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
	"#9c755f", "#bab0ac"}

// Limits of what the page lists, so a huge or hostile run folder still gives a readable page.
const (
	maxLabel        = 60
	maxErrorText    = 300
	maxListedIssues = 100
	// legendExtra is the room a run's label has beyond maxLabel for its folder.
	legendExtra = 30
	maxFolder   = 28
)

// runLabel names a run by its model and its folder, so that runs of one model can be told
// apart, in at most width characters: the model is shortened first, and a long folder keeps
// its end, where runs differ.
func runLabel(o Overview, width int) string {
	folder := []rune(termtext.Sanitize(filepath.Clean(o.Dir)))
	if most := min(maxFolder, width/2); len(folder) > most {
		folder = append([]rune("…"), folder[len(folder)-most+1:]...)
	}
	model := o.Model
	switch o.Caveat {
	case "":
	case ParamsNote:
		model += " (own parameters)"
	default:
		model += " (" + o.Loop + ")"
	}
	return OneLine(model, max(width-len(folder)-3, 12)) + " · " + string(folder)
}

// WriteHTML writes report.html for one run or several: a leaderboard with the published rows,
// score against cost per task, turns per episode, and a task x run heatmap.
func WriteHTML(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("write report.html: no run")
	}
	v := htmlView{Note: SubsetNote, Source: leaderboard.Source, Version: version.Version, TestNote: TestNote,
		MinTasks: grader.MinTasksForInterval, PartialNote: PartialNote}
	overviews := Overviews(runs)
	var labels []string
	for i, r := range runs {
		o := overviews[i]
		labels = append(labels, runLabel(o, maxLabel+legendExtra))
		rv := runView{N: i + 1, Colour: palette[i%len(palette)], Overview: o, Label: labels[i]}
		for _, e := range r.Results {
			if e.Status == grader.StatusOK {
				continue
			}
			if len(rv.Issues) == maxListedIssues {
				rv.MoreIssues++
				continue
			}
			rv.Issues = append(rv.Issues,
				issue{Task: e.Task, Repeat: e.Repeat, Status: e.Status, Error: OneLine(e.Error, maxErrorText)})
		}
		v.Runs = append(v.Runs, rv)
	}
	v.Title = "ITBench-AA report: " + OneLine(overviews[0].Model, maxLabel)
	if len(runs) > 1 {
		v.Title = fmt.Sprintf("ITBench-AA report: %d runs", len(runs))
	}
	v.Board, v.OtherBoard = boardCharts(overviews, true), boardCharts(overviews, false)
	for _, rv := range v.Runs {
		if rv.OtherTasks != "" {
			v.OtherTasks = append(v.OtherTasks, fmt.Sprintf("R%d: not ranked against the published leaderboard: %s; %s.", rv.N,
				rv.OtherTasks, OtherTasksNote))
		}
	}
	if v.Board == nil {
		v.Note = ""
	}
	for _, sz := range sizes {
		v.Scatter = append(v.Scatter, scatterChart(runs, labels, sz))
		v.Turns = append(v.Turns, turnsChart(runs, labels, sz))
		v.Heat = append(v.Heat, heatChart(runs, labels, sz))
	}
	var err error
	if v.Analysis, err = analysisSection(analysesOf(runs)); err != nil {
		return err
	}
	if err := page.Execute(w, v); err != nil {
		return fmt.Errorf("write report.html: %w", err)
	}
	return nil
}

type htmlView struct {
	Title, Note, Source, Version string
	TestNote                     string // how runs are compared, when there are several
	MinTasks                     int    // the fewest shared tasks given an interval
	PartialNote                  string
	Runs                         []runView
	// Board ranks the runs of ITBench-AA's tasks among the published rows, OtherBoard the other
	// runs alone, OtherTasks says why; each board is nil when it has no run. Each chart is
	// drawn at each of the sizes, in their order.
	Board, OtherBoard []boardView
	OtherTasks        []string
	Scatter           []scatterView
	Turns             []histogramView
	Heat              []gridView
	Analysis          template.HTML // analysis.go
}

type runView struct {
	Overview
	N          int
	Colour     string
	Label      string
	Issues     []issue
	MoreIssues int
}

func (r runView) Cost() string        { return FormatUSD(r.CostUSD) }
func (r runView) PerTaskCost() string { return FormatUSD(r.CostPerTask) }

type issue struct {
	Task, Status, Error string
	Repeat              int
}

// boardLabel is the most characters a leaderboard's row label has.
const boardLabel = 46

type boardView struct {
	barRows
	Height, Bottom float64
	Rows           []boardBar
	Ticks          []tick
}

type boardBar struct {
	boardRow
	Width, ValueX, BarY, LabelY        float64
	CILo, CIHi, Mid, CapTop, CapBottom float64 // the interval's whisker
	Colour, Tag, Value                 string
}

// boardCharts draws board(runs, published) at each size: nil when it has no run.
func boardCharts(runs []Overview, published bool) []boardView {
	rows := board(runs, published)
	if !slices.ContainsFunc(rows, func(r boardRow) bool { return !r.Published() }) {
		return nil
	}
	var out []boardView
	for _, sz := range sizes {
		out = append(out, boardChart(runs, rows, sz))
	}
	return out
}

// boardChart lays the board's rows out at one size: labels left of the bars, or above them
// when stacked.
func boardChart(runs []Overview, rows []boardRow, sz size) boardView {
	layout := newBarRows(sz, boardLabel)
	left, scale := layout.Left, layout.Right-layout.Left
	v := boardView{barRows: layout, Bottom: layout.bottom(len(rows), 10)}
	v.Height = v.Bottom + 30
	for i := 0; i <= 10; i++ {
		if sz.Stacked && i%2 == 1 {
			continue // 0.1 apart, the labels would touch
		}
		v.Ticks = append(v.Ticks, tick{Pos: left + scale*float64(i)/10, Label: fmt.Sprintf("%.1f", float64(i)/10)})
	}
	for i, row := range rows {
		b := boardBar{boardRow: row, Width: scale * clamp01(row.Score)}
		b.LabelY, b.BarY = layout.row(i, 10)
		b.Label = OneLine(row.Label, layout.LabelChars)
		if !row.Published() {
			b.Label = runLabel(runs[row.Run], layout.LabelChars)
		}
		end := left + b.Width
		if row.Published() {
			b.Colour, b.Tag = "#c9c9c9", "published, "+english.Count(row.Tasks, "task")
			b.Value = fmt.Sprintf("%.3f", row.Score)
		} else {
			b.Colour, b.Tag = palette[row.Run%len(palette)], fmt.Sprintf("R%d, %s", row.Run+1, english.Count(row.Tasks, "task"))
			b.Value = row.Standing()
			if ci := row.CI95; ci != nil && !row.Unfinished() {
				b.CILo, b.CIHi = left+scale*clamp01(ci[0]), left+scale*clamp01(ci[1])
				b.Mid, b.CapTop, b.CapBottom = b.BarY+8.5, b.BarY+3, b.BarY+14
				end = max(end, b.CIHi)
			}
		}
		b.ValueX = end + 6
		v.Rows = append(v.Rows, b)
	}
	return v
}

// A scatter point's radius; points nearer than sameSpot pixels are spread around their spot,
// spreadR from it, so that none hides another.
const (
	pointR   = 6
	sameSpot = 4
	spreadR  = 8
)

type scatterView struct {
	plotArea
	XTicks, YTicks []tick
	Points         []point
	Unknown        []unknownCost
	Spread         bool // some points were spread around their spot
	// AllFree says every known cost is $0: the points would all stand on the axis, so none
	// is drawn.
	AllFree bool
}

type point struct {
	X, Y          float64
	Colour, Title string
}

type unknownCost struct {
	Run   int
	Label string
	Tasks string
}

// scatterChart puts each task of each run at (its mean cost per episode, its score over the
// repeats that ended); tasks whose cost is unknown are listed instead. The axes run a little
// beyond the data, so that no point sits on an axis, and points at one spot are spread
// around it.
func scatterChart(runs []*Run, labels []string, sz size) scatterView {
	v := scatterView{plotArea: newPlotArea(sz)}
	type known struct {
		run         int
		task        string
		cost        float64
		score       taskScore
		x, y        float64
		spot, index int // the spot it shares with others, and its place among them
	}
	var points []known
	top := 0.0
	for i, r := range runs {
		scores := taskScores(r)
		var unknown []string
		for _, t := range r.PerTask() {
			sc := scores[t.Task]
			switch {
			case sc.ended == 0:
			case t.CostPerEpisode != nil:
				points = append(points, known{run: i, task: t.Task, cost: *t.CostPerEpisode, score: sc})
				top = max(top, *t.CostPerEpisode)
			default:
				unknown = append(unknown, t.Task)
			}
		}
		if len(unknown) > 0 {
			v.Unknown = append(v.Unknown,
				unknownCost{Run: i + 1, Label: labels[i], Tasks: OneLine(strings.Join(unknown, ", "), 2000)})
		}
	}
	if len(points) > 0 && top == 0 {
		v.AllFree = true
		return v
	}
	step, top := niceScale(top)
	// The data run from 0 to top and from 0 to 1; the axes 3% and 5% beyond.
	xLo, xHi, yLo, yHi := -0.03*top, 1.03*top, -0.05, 1.05
	x := func(c float64) float64 { return v.x((c - xLo) / (xHi - xLo)) }
	y := func(s float64) float64 { return v.y((s - yLo) / (yHi - yLo)) }
	for c := 0.0; c <= top+step/2; c += step {
		v.XTicks = append(v.XTicks, tick{Pos: x(c), Label: usdTick(c, step)})
	}
	for i := 0; i <= 5; i++ {
		s := float64(i) / 5
		v.YTicks = append(v.YTicks, tick{Pos: y(s), Label: fmt.Sprintf("%.1f", s)})
	}
	var spots [][2]float64 // the spots, and how many points each has
	var crowd []int
	for i := range points {
		p := &points[i]
		p.x, p.y = x(max(p.cost, 0)), y(clamp01(p.score.mean))
		p.spot = -1
		for j, s := range spots {
			if math.Hypot(p.x-s[0], p.y-s[1]) < sameSpot {
				p.spot, p.index = j, crowd[j]
				crowd[j]++
				break
			}
		}
		if p.spot < 0 {
			p.spot = len(spots)
			spots, crowd = append(spots, [2]float64{p.x, p.y}), append(crowd, 1)
		}
	}
	for _, p := range points {
		px, py := p.x, p.y
		if n := crowd[p.spot]; n > 1 {
			angle := 2 * math.Pi * float64(p.index) / float64(n)
			px, py = spots[p.spot][0]+spreadR*math.Cos(angle), spots[p.spot][1]+spreadR*math.Sin(angle)
			v.Spread = true
		}
		v.Points = append(v.Points, point{X: px, Y: py, Colour: palette[p.run%len(palette)],
			Title: fmt.Sprintf("R%d %s, %s: score %.3f%s, %s per episode", p.run+1, labels[p.run],
				OneLine(p.task, maxLabel), p.score.mean, p.score.partial(), FormatUSD(&p.cost))})
	}
	return v
}

// usdTick labels a cost axis whose ticks are step apart: every tick with the same decimals,
// at least cents ($0, $0.20, $0.40 ... $1.00), and $0 for zero.
func usdTick(c, step float64) string {
	if c == 0 {
		return "$0"
	}
	decimals := max(2, int(math.Ceil(-math.Log10(step)-1e-9)))
	return fmt.Sprintf("$%.*f", decimals, c)
}

// taskScore is a task's score in a run as the charts show it: the mean over the repeats that
// ended, of planned repeats. Episodes in error and repeats not run yet are left out here (the
// run's score counts them as 0), and said.
type taskScore struct {
	mean                    float64
	ended, planned, inError int
	notRun                  int
}

func taskScores(r *Run) map[string]taskScore {
	out := map[string]taskScore{}
	for _, t := range r.Summary.PerTask {
		sc := taskScore{planned: len(t.Episodes)}
		sum := 0.0
		for _, e := range t.Episodes {
			switch e.Status {
			case grader.StatusError:
				sc.inError++
			case grader.StatusUnfinished, grader.StatusCostLimit:
				sc.notRun++
			default:
				sc.ended++
				sum += e.Score
			}
		}
		if sc.ended > 0 {
			sc.mean = sum / float64(sc.ended)
		}
		out[t.Task] = sc
	}
	return out
}

// partial says which repeats a score leaves out: "" when none.
func (t taskScore) partial() string {
	if t.ended == t.planned {
		return ""
	}
	var left []string
	if t.inError > 0 {
		left = append(left, fmt.Sprintf("%d in error", t.inError))
	}
	if t.notRun > 0 {
		left = append(left, fmt.Sprintf("%d not run yet", t.notRun))
	}
	return fmt.Sprintf(" over %d of %s (%s)", t.ended, english.Count(t.planned, "repeat"), strings.Join(left, ", "))
}

// turnsChart counts each run's finished episodes by turns, in ten bins up to the turn cap
// and one for the cap itself, the runs' bars side by side.
func turnsChart(runs []*Run, labels []string, sz size) histogramView {
	limit := 1
	for _, r := range runs {
		limit = max(limit, r.Header.MaxTurns)
		for _, e := range r.Results {
			limit = max(limit, e.Turns)
		}
	}
	width := (limit + 9) / 10
	bins := limit/width + 1
	counts := make([][]int, len(runs))
	for i, r := range runs {
		counts[i] = make([]int, bins)
		for _, e := range r.Results {
			counts[i][min(max(e.Turns, 0)/width, bins-1)]++
		}
	}
	var names []string
	for b := range bins {
		lo, hi := b*width, (b+1)*width-1
		name := fmt.Sprintf("%d-%d", lo, hi)
		if width == 1 || b == bins-1 && lo == limit {
			name = fmt.Sprint(lo)
		}
		names = append(names, name)
	}
	v := histogram(sz, counts, names, func(i, b int) string {
		return fmt.Sprintf("R%d %s: %s with %s turns", i+1, labels[i], english.Count(counts[i][b], "episode"), names[b])
	})
	v.Label, v.XTitle, v.YTitle = "turns per episode", "turns", "episodes"
	return v
}

// heatChart is a task x run grid of task scores: the mean over the repeats that ended,
// marked with how many of how many when some did not (in error, not run yet); "error" when
// every repeat that ran ended in error, grey when the run does not have the task or has not
// run it yet.
func heatChart(runs []*Run, labels []string, sz size) gridView {
	var tasks []string
	seen := map[string]bool{}
	perRun := make([]map[string]taskScore, len(runs))
	for i, r := range runs {
		perRun[i] = taskScores(r)
		for _, t := range r.Summary.PerTask {
			if !seen[t.Task] {
				seen[t.Task] = true
				tasks = append(tasks, t.Task)
			}
		}
	}
	var columns, colours []string
	for i := range runs {
		columns, colours = append(columns, fmt.Sprintf("R%d", i+1)), append(colours, palette[i%len(palette)])
	}
	v := newGrid(sz, "task by run heatmap", columns, colours, len(tasks))
	for _, task := range tasks {
		name := OneLine(task, maxLabel)
		var cells []gridCell
		for i := range runs {
			c := gridCell{Fill: "#eeeeee", Text: "-",
				Title: fmt.Sprintf("%s: not in R%d", name, i+1)}
			t, ok := perRun[i][task]
			switch {
			case !ok:
			case t.ended == 0 && t.inError > 0:
				c.Fill, c.Text = errorFill, "error"
				c.Title = fmt.Sprintf("%s, R%d %s: no score, %d of %s in error", name, i+1, labels[i], t.inError,
					english.Count(t.planned, "repeat"))
			case t.ended == 0:
				c.Text, c.Title = "not run", fmt.Sprintf("%s: not run yet in R%d", name, i+1)
			default:
				c.Fill, c.Text = scoreColour(t.mean), fmt.Sprintf("%.2f", t.mean)
				if t.ended < t.planned {
					c.Text += fmt.Sprintf(" (%d/%d)", t.ended, t.planned)
				}
				c.Title = fmt.Sprintf("%s, R%d %s: score %.3f%s", name, i+1, labels[i], t.mean, t.partial())
			}
			cells = append(cells, c)
		}
		v.addRow(task, cells)
	}
	return v
}

// errorFill is a heatmap cell with no score because its episodes failed: neither a score's
// red-to-green nor the grey of nothing run.
const errorFill = "#c9b8e0"

// scoreColour runs from red (0) through yellow to green (1).
func scoreColour(score float64) string {
	return fmt.Sprintf("hsl(%.0f, 65%%, 78%%)", 120*clamp01(score))
}
