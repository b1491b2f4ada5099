package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/grader/leaderboard"
	"github.com/aa-grade/aa-grade/harness/runner"
)

//go:embed report.html.tmpl
var pageSource string

// page is report.html: html/template escapes every value from a run folder in its context,
// and the page loads nothing (its Content-Security-Policy forbids it too).
var page = template.Must(template.New("report.html").Parse(pageSource))

// palette colours the runs (Tableau 10, readable on white); runs beyond it reuse it.
var palette = []string{"#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"}

// Limits of what the page lists, so a huge or hostile run folder still gives a readable page.
const (
	maxLabel        = 60
	maxErrorText    = 300
	maxListedIssues = 100
)

// WriteHTML writes report.html for one run or several: a leaderboard with the published rows,
// score against cost per task, turns per episode, and a task x run heatmap.
func WriteHTML(w io.Writer, runs []*Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("write report.html: no run")
	}
	v := htmlView{Note: SubsetNote, Source: leaderboard.Source, Version: runner.Version}
	var overviews []Overview
	for i, r := range runs {
		o := r.Overview()
		overviews = append(overviews, o)
		rv := runView{N: i + 1, Colour: palette[i%len(palette)], Overview: o, Label: OneLine(o.Model, maxLabel)}
		for _, e := range r.Results {
			if e.Status == grader.StatusOK {
				continue
			}
			if len(rv.Issues) == maxListedIssues {
				rv.MoreIssues++
				continue
			}
			rv.Issues = append(rv.Issues, issue{Task: e.Task, Repeat: e.Repeat, Status: e.Status, Error: OneLine(e.Error, maxErrorText)})
		}
		v.Runs = append(v.Runs, rv)
	}
	v.Title = "ITBench-AA report: " + OneLine(overviews[0].Model, maxLabel)
	if len(runs) > 1 {
		v.Title = fmt.Sprintf("ITBench-AA report: %d runs", len(runs))
	}
	v.Board = boardChart(overviews)
	v.Scatter = scatterChart(runs)
	v.Turns = turnsChart(runs)
	v.Heat = heatChart(runs)
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
	Runs                         []runView
	Board                        boardView
	Scatter                      scatterView
	Turns                        histogramView
	Heat                         heatView
	Analysis                     template.HTML // analysis.go
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

// tick is an axis mark at a pixel position.
type tick struct {
	Pos   float64
	Label string
}

// Chart geometry, in pixels of the SVG's own coordinates.
const (
	chartWidth = 1100
	boardLeft  = 360 // labels end here, bars start
	boardRight = 780
	boardRowH  = 26
)

type boardView struct {
	Height, Left, Right, Bottom float64
	Rows                        []boardBar
	Ticks                       []tick
}

type boardBar struct {
	boardRow
	Y, Width, ValueX                   float64
	CILo, CIHi, Mid, CapTop, CapBottom float64 // the interval's whisker
	Colour, Tag, Value                 string
}

func boardChart(runs []Overview) boardView {
	rows := board(runs)
	scale := float64(boardRight - boardLeft)
	v := boardView{Left: boardLeft, Right: boardRight, Bottom: float64(len(rows)*boardRowH + 10)}
	v.Height = v.Bottom + 30
	for i := 0; i <= 10; i++ {
		v.Ticks = append(v.Ticks, tick{Pos: boardLeft + scale*float64(i)/10, Label: fmt.Sprintf("%.1f", float64(i)/10)})
	}
	for i, row := range rows {
		b := boardBar{boardRow: row, Y: float64(i*boardRowH + 10), Width: scale * clamp01(row.Score)}
		b.Label = OneLine(row.Label, maxLabel)
		end := boardLeft + b.Width
		if row.Published() {
			b.Colour, b.Tag = "#c9c9c9", fmt.Sprintf("published, %d tasks", row.Tasks)
			b.Value = fmt.Sprintf("%.3f", row.Score)
		} else {
			b.Colour, b.Tag = palette[row.Run%len(palette)], fmt.Sprintf("R%d, %d tasks", row.Run+1, row.Tasks)
			b.CILo, b.CIHi = boardLeft+scale*clamp01(row.CI95[0]), boardLeft+scale*clamp01(row.CI95[1])
			b.Mid, b.CapTop, b.CapBottom = b.Y+8.5, b.Y+3, b.Y+14
			b.Value = fmt.Sprintf("%.3f [%.3f-%.3f]", row.Score, row.CI95[0], row.CI95[1])
			end = max(end, b.CIHi)
		}
		b.ValueX = end + 6
		v.Rows = append(v.Rows, b)
	}
	return v
}

// Scatter and histogram plot areas.
const (
	plotLeft   = 70
	plotTop    = 20
	plotWidth  = 900
	plotHeight = 360
)

type scatterView struct {
	Left, Top, Right, Bottom, Height float64
	XTicks, YTicks                   []tick
	Points                           []point
	Unknown                          []unknownCost
}

type point struct {
	X, Y          float64
	Colour, Title string
}

type unknownCost struct {
	Run   int
	Model string
	Tasks string
}

// scatterChart puts each task of each run at (its mean cost per episode, its score); tasks
// whose cost is unknown are listed instead.
func scatterChart(runs []*Run) scatterView {
	v := scatterView{Left: plotLeft, Top: plotTop, Right: plotLeft + plotWidth, Bottom: plotTop + plotHeight, Height: plotTop + plotHeight + 24}
	type known struct {
		run         int
		task        string
		cost, score float64
	}
	var points []known
	top := 0.0
	for i, r := range runs {
		var unknown []string
		for _, t := range r.PerTask() {
			switch {
			case t.CostPerEpisode != nil:
				points = append(points, known{i, t.Task, *t.CostPerEpisode, t.Score})
				top = max(top, *t.CostPerEpisode)
			case t.Episodes > 0:
				unknown = append(unknown, t.Task)
			}
		}
		if len(unknown) > 0 {
			v.Unknown = append(v.Unknown, unknownCost{Run: i + 1, Model: OneLine(r.Header.Model, maxLabel),
				Tasks: OneLine(strings.Join(unknown, ", "), 2000)})
		}
	}
	step, top := niceScale(top)
	for x := 0.0; x <= top+step/2; x += step {
		v.XTicks = append(v.XTicks, tick{Pos: plotLeft + plotWidth*x/top, Label: FormatUSD(&x)})
	}
	v.YTicks = scoreTicks(plotTop, plotHeight)
	for _, p := range points {
		v.Points = append(v.Points, point{
			X: plotLeft + plotWidth*max(p.cost, 0)/top, Y: plotTop + plotHeight*(1-clamp01(p.score)),
			Colour: palette[p.run%len(palette)],
			Title: fmt.Sprintf("R%d %s, %s: score %.3f, %s per episode", p.run+1, OneLine(runs[p.run].Header.Model, maxLabel),
				OneLine(p.task, maxLabel), p.score, FormatUSD(&p.cost)),
		})
	}
	return v
}

type histogramView struct {
	Left, Top, Right, Bottom, Height float64
	YTicks                           []tick
	Bins                             []bin
	Bars                             []bar
	Empty                            bool
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
func turnsChart(runs []*Run) histogramView {
	v := histogramView{Left: plotLeft, Top: plotTop, Right: plotLeft + plotWidth, Bottom: plotTop + plotHeight, Height: plotTop + plotHeight + 24}
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
		v.YTicks = append(v.YTicks, tick{Pos: plotTop + plotHeight*(1-y/top), Label: fmt.Sprintf("%.0f", y)})
	}
	group := float64(plotWidth) / float64(bins)
	barW := group * 0.8 / float64(len(runs))
	for b := range bins {
		lo, hi := b*width, (b+1)*width-1
		label := fmt.Sprintf("%d-%d", lo, hi)
		if width == 1 || b == bins-1 && lo == limit {
			label = fmt.Sprint(lo)
		}
		v.Bins = append(v.Bins, bin{Center: plotLeft + group*(float64(b)+0.5), Label: label})
		for i := range runs {
			n := counts[i][b]
			h := plotHeight * float64(n) / top
			v.Bars = append(v.Bars, bar{X: plotLeft + group*float64(b) + group*0.1 + barW*float64(i), Y: plotTop + plotHeight - h,
				Width: barW, Height: h, Colour: palette[i%len(palette)],
				Title: fmt.Sprintf("R%d %s: %d episodes with %s turns", i+1, OneLine(runs[i].Header.Model, maxLabel), n, label)})
		}
	}
	return v
}

type heatView struct {
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

// Heatmap geometry.
const (
	heatLabelW = 240
	heatCellW  = 80
	heatCellH  = 22
	heatTop    = 30
)

// heatChart is a task x run grid of task scores (the mean over repeats); a task a run does
// not have, or has not run yet, is grey.
func heatChart(runs []*Run) heatView {
	var tasks []string
	seen := map[string]bool{}
	perRun := make([]map[string]TaskStats, len(runs))
	for i, r := range runs {
		perRun[i] = map[string]TaskStats{}
		for _, t := range r.PerTask() {
			perRun[i][t.Task] = t
			if !seen[t.Task] {
				seen[t.Task] = true
				tasks = append(tasks, t.Task)
			}
		}
	}
	v := heatView{Width: float64(heatLabelW + heatCellW*len(runs) + 10), Height: float64(heatTop + heatCellH*len(tasks) + 10),
		LabelEnd: heatLabelW, CellWidth: heatCellW, CellHeight: heatCellH, CellMid: heatCellW / 2}
	for i := range runs {
		v.Columns = append(v.Columns, heatColumn{X: float64(heatLabelW + heatCellW*i + heatCellW/2), Label: fmt.Sprintf("R%d", i+1),
			Colour: palette[i%len(palette)]})
	}
	for j, task := range tasks {
		row := heatRow{Y: float64(heatTop + heatCellH*j), Task: OneLine(task, maxLabel)}
		for i, r := range runs {
			c := heatCell{X: float64(heatLabelW + heatCellW*i), Fill: "#eeeeee", Text: "-",
				Title: fmt.Sprintf("%s: not in R%d", OneLine(task, maxLabel), i+1)}
			if t, ok := perRun[i][task]; ok && t.Episodes == 0 {
				c.Text, c.Title = "not run", fmt.Sprintf("%s: not run yet in R%d", OneLine(task, maxLabel), i+1)
			} else if ok {
				c.Fill, c.Text = scoreColour(t.Score), fmt.Sprintf("%.2f", t.Score)
				c.Title = fmt.Sprintf("%s, R%d %s: score %.3f (%s)", OneLine(task, maxLabel), i+1,
					OneLine(r.Header.Model, maxLabel), t.Score, OneLine(strings.Join(t.Statuses, ", "), 200))
			}
			row.Cells = append(row.Cells, c)
		}
		v.Rows = append(v.Rows, row)
	}
	return v
}

// scoreColour runs from red (0) through yellow to green (1).
func scoreColour(score float64) string {
	return fmt.Sprintf("hsl(%.0f, 65%%, 78%%)", 120*clamp01(score))
}

func scoreTicks(top, height float64) []tick {
	var ticks []tick
	for i := 0; i <= 5; i++ {
		s := float64(i) / 5
		ticks = append(ticks, tick{Pos: top + height*(1-s), Label: fmt.Sprintf("%.1f", s)})
	}
	return ticks
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
