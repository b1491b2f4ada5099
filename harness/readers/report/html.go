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
var page = template.Must(template.New("report.html").Parse(pageSource))

// palette colours the runs (Tableau 10, readable on white); runs beyond it reuse it.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7",
	"#9c755f", "#bab0ac"}

// Limits of what the page lists, so a huge or hostile run folder still gives a readable page.
const (
	maxLabel        = 60
	maxErrorText    = 300
	maxListedIssues = 100
	// legendExtra is the room a run's label has beyond maxLabel for its folder; boardLabel
	// what fits left of the leaderboard's bars.
	legendExtra = 30
	boardLabel  = 46
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
	Heat              []heatView
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

// size is a width a chart is laid out for. Each chart is drawn at every size and the page's CSS
// shows the one that fits the window at its own scale, so that its text keeps its 12 px however
// narrow the window (a chart drawn 1100 wide and shrunk to a 700 px window had 6 px text).
type size struct {
	Name  string // the chart's class, which the page's CSS shows or hides
	Width float64
	// Stacked lays a chart out for a phone: the leaderboard's labels above their bars, less
	// room for the axes' labels.
	Stacked bool
}

// sizes are the widths the charts are drawn at: the page's own (1100, from 1160 px windows up),
// a laptop's half or a small window's (640, from 700 px), and a phone's (330).
var sizes = []size{
	{Name: "full", Width: 1100}, {Name: "medium", Width: 640}, {Name: "small", Width: 330, Stacked: true},
}

// tick is an axis mark at a pixel position.
type tick struct {
	Pos   float64
	Label string
}

// Chart geometry, in pixels of the SVG's own coordinates: the leaderboard's bars run from its
// labels, boardLeft of the width, to boardRight of it; a stacked board's labels stand above
// its bars, which take stackedBars of the width.
const (
	boardLeft   = 0.36
	boardRight  = 0.73
	boardRowH   = 26
	stackedRowH = 40
	stackedBars = 0.55
	// charWidth is about what a character of the charts' 12 px text takes, to cut labels to
	// the room they have.
	charWidth = 7
)

type boardView struct {
	size
	Height, Left, Right, Bottom float64
	Rows                        []boardBar
	Ticks                       []tick
}

type boardBar struct {
	boardRow
	Y, Width, ValueX, BarY, LabelY     float64
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
	left, right, rowH, room := sz.Width*boardLeft, sz.Width*boardRight, float64(boardRowH), sz.Width*boardLeft
	if sz.Stacked {
		left, right, rowH, room = 0, sz.Width*stackedBars, stackedRowH, sz.Width
	}
	labelChars := min(boardLabel, int(room/charWidth)-1)
	scale := right - left
	v := boardView{size: sz, Left: left, Right: right, Bottom: float64(len(rows))*rowH + 10}
	v.Height = v.Bottom + 30
	for i := 0; i <= 10; i++ {
		if sz.Stacked && i%2 == 1 {
			continue // 0.1 apart, the labels would touch
		}
		v.Ticks = append(v.Ticks, tick{Pos: left + scale*float64(i)/10, Label: fmt.Sprintf("%.1f", float64(i)/10)})
	}
	for i, row := range rows {
		b := boardBar{boardRow: row, Y: float64(i)*rowH + 10, Width: scale * clamp01(row.Score)}
		b.BarY, b.LabelY = b.Y, b.Y
		if sz.Stacked {
			b.BarY = b.Y + 18
		}
		b.Label = OneLine(row.Label, labelChars)
		if !row.Published() {
			b.Label = runLabel(runs[row.Run], labelChars)
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

// Scatter and histogram plot areas: room on the left for the tick labels and the vertical
// axis's title (less on a phone's), on the right, below for the tick labels and the
// horizontal axis's title.
const (
	plotLeft        = 80
	plotLeftStacked = 50
	plotRight       = 40
	plotTop         = 20
	plotHeight      = 340
	plotHeightSmall = 240
	plotBelow       = 48
	// pointR is a scatter point's radius; points nearer than sameSpot pixels are spread
	// around their spot, spreadR from it, so that none hides another.
	pointR   = 6
	sameSpot = 4
	spreadR  = 8
	// minBinLabel is the narrowest bin whose label ("90-99") fits under it.
	minBinLabel = 44
)

// plotArea is where a scatter or a histogram draws at one size, and where its axes' titles go.
type plotArea struct {
	size
	Left, Top, Right, Bottom, Height, Middle, AxisTitleY, AxisTitleX, YTitleX float64
}

func newPlotArea(sz size) plotArea {
	left, height := float64(plotLeft), float64(plotHeight)
	if sz.Stacked {
		left, height = plotLeftStacked, plotHeightSmall
	}
	right := sz.Width - plotRight
	return plotArea{size: sz, Left: left, Top: plotTop, Right: right, Bottom: plotTop + height,
		Height: plotTop + height + plotBelow, Middle: plotTop + height/2, AxisTitleY: plotTop + height + 40,
		AxisTitleX: (left + right) / 2, YTitleX: max(14, left/2-20)}
}

// x and y map a fraction of the plot's width and height, from its left and its bottom.
func (a plotArea) x(f float64) float64 { return a.Left + (a.Right-a.Left)*f }
func (a plotArea) y(f float64) float64 { return a.Bottom - (a.Bottom-a.Top)*f }

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

type histogramView struct {
	plotArea
	YTicks []tick
	Bins   []bin
	Bars   []bar
	Empty  bool
}

type bin struct {
	Center float64
	Label  string
}

type bar struct {
	X, Y, Width, Height float64
	Colour, Title       string
}

// turnsChart counts each run's finished episodes by turns, in ten bins up to the turn cap
// and one for the cap itself, the runs' bars side by side.
func turnsChart(runs []*Run, labels []string, sz size) histogramView {
	v := histogramView{plotArea: newPlotArea(sz)}
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
	most := 0
	for i, r := range runs {
		counts[i] = make([]int, bins)
		for _, e := range r.Results {
			b := min(max(e.Turns, 0)/width, bins-1)
			counts[i][b]++
			most = max(most, counts[i][b])
		}
	}
	if most == 0 {
		v.Empty = true
		return v
	}
	step, top := niceScale(float64(most))
	step = math.Max(step, 1)
	for y := 0.0; y <= top+step/2; y += step {
		v.YTicks = append(v.YTicks, tick{Pos: v.y(y / top), Label: fmt.Sprintf("%.0f", y)})
	}
	group := (v.Right - v.Left) / float64(bins)
	barW := group * 0.8 / float64(len(runs))
	for b := range bins {
		lo, hi := b*width, (b+1)*width-1
		label := fmt.Sprintf("%d-%d", lo, hi)
		if width == 1 || b == bins-1 && lo == limit {
			label = fmt.Sprint(lo)
		}
		if group >= minBinLabel || b%2 == 0 || b == bins-1 { // too narrow a bin: every other labelled
			v.Bins = append(v.Bins, bin{Center: v.x((float64(b) + 0.5) / float64(bins)), Label: label})
		}
		for i := range runs {
			n := counts[i][b]
			h := (v.Bottom - v.Top) * float64(n) / top
			v.Bars = append(v.Bars,
				bar{X: v.Left + group*float64(b) + group*0.1 + barW*float64(i), Y: v.Bottom - h,
					Width: barW, Height: h, Colour: palette[i%len(palette)],
					Title: fmt.Sprintf("R%d %s: %s with %s turns", i+1, labels[i], english.Count(n, "episode"), label)})
		}
	}
	return v
}

type heatView struct {
	size
	Width, Height                            float64
	LabelEnd, CellWidth, CellHeight, CellMid float64
	Columns                                  []heatColumn
	Rows                                     []heatRow
}

type heatColumn struct {
	X             float64
	Label, Colour string
}

type heatRow struct {
	Y     float64
	Task  string
	Cells []heatCell
}

type heatCell struct {
	X                 float64
	Fill, Text, Title string
}

// Heatmap geometry: at full size; narrower, the labels take heatLabelShare of the width and
// the cells share the rest, heatMinCellW at least.
const (
	heatLabelW     = 240
	heatCellW      = 80
	heatLabelShare = 0.36
	heatMinCellW   = 48
	heatCellH      = 22
	heatTop        = 30
)

// heatChart is a task x run grid of task scores: the mean over the repeats that ended,
// marked with how many of how many when some did not (in error, not run yet); "error" when
// every repeat that ran ended in error, grey when the run does not have the task or has not
// run it yet.
func heatChart(runs []*Run, labels []string, sz size) heatView {
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
	labelW, cellW, chars := float64(heatLabelW), float64(heatCellW), maxLabel
	if full := labelW + cellW*float64(len(runs)) + 10; full > sz.Width {
		labelW = sz.Width * heatLabelShare
		cellW = max(heatMinCellW, min(cellW, (sz.Width-labelW-10)/float64(len(runs))))
		chars = int(labelW/charWidth) - 1
	}
	v := heatView{size: sz, Width: labelW + cellW*float64(len(runs)) + 10,
		Height: float64(heatTop + heatCellH*len(tasks) + 10), LabelEnd: labelW, CellWidth: cellW,
		CellHeight: heatCellH, CellMid: cellW / 2}
	for i := range runs {
		v.Columns = append(v.Columns,
			heatColumn{X: labelW + cellW*float64(i) + cellW/2, Label: fmt.Sprintf("R%d", i+1),
				Colour: palette[i%len(palette)]})
	}
	for j, task := range tasks {
		name := OneLine(task, maxLabel)
		row := heatRow{Y: float64(heatTop + heatCellH*j), Task: OneLine(task, chars)}
		for i := range runs {
			c := heatCell{X: labelW + cellW*float64(i), Fill: "#eeeeee", Text: "-",
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
			row.Cells = append(row.Cells, c)
		}
		v.Rows = append(v.Rows, row)
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

// niceScale picks an axis step of 1, 2 or 5 times a power of ten giving about five ticks, and
// the axis top it reaches; an empty range gets the axis 0-1.
func niceScale(most float64) (step, top float64) {
	if !(most > 0) || math.IsInf(most, 0) {
		return 0.2, 1
	}
	raw := most / 5
	pow := math.Pow(10, math.Floor(math.Log10(raw)))
	step = 10 * pow
	for _, m := range []float64{1, 2, 5} {
		if m*pow >= raw {
			step = m * pow
			break
		}
	}
	return step, step * math.Ceil(most/step)
}

func clamp01(v float64) float64 { return math.Min(math.Max(v, 0), 1) }
