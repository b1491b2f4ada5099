package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
)

//go:embed shared.html.tmpl
var sharedSource string

// parsePage parses a page's template with what report.html and the analysis page share
// (shared.html.tmpl): the style, with the CSS that picks a chart's size, the runs' legend, and
// the charts both draw.
func parsePage(name, source string) *template.Template {
	return template.Must(template.Must(template.New(name).Parse(source)).Parse(sharedSource))
}

// size is a width a chart is laid out for. Each chart is drawn at every size and the page's CSS
// shows the one that fits the window at its own scale, so that its text keeps its 12 px however
// narrow the window (a chart drawn 1100 wide and shrunk to a 700 px window had 6 px text).
type size struct {
	Name  string // the chart's class, which the page's CSS shows or hides
	Width float64
	// Stacked lays a chart out for a phone: the labels of a chart of bars above their bars,
	// less room for the axes' labels.
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

// charWidth is about what a character of the charts' 12 px text takes, to cut labels to the
// room they have.
const charWidth = 7

// Charts of one horizontal bar a row (the leaderboard, the false positives): the bars run from
// the rows' labels, barsLeft of the width, to barsRight of it; stacked, the labels stand above
// their bars, which take stackedBars of the width.
const (
	barsLeft    = 0.36
	barsRight   = 0.73
	barRowH     = 26
	stackedRowH = 40
	stackedBars = 0.55
	// stackedBarY is how far below its label a stacked row's bar starts.
	stackedBarY = 18
)

// barRows is where a chart of one horizontal bar a row draws at one size: its bars from Left
// to Right, its rows' labels at LabelX, anchored at their end left of the bars or at their
// start above them, in at most LabelChars characters.
type barRows struct {
	size
	Left, Right, LabelX float64
	Anchor              string
	LabelChars          int
	rowH                float64
}

// newBarRows lays out rows of bars at sz, their labels cut to at most most characters.
func newBarRows(sz size, most int) barRows {
	b := barRows{size: sz, Left: sz.Width * barsLeft, Right: sz.Width * barsRight, Anchor: "end", rowH: barRowH}
	b.LabelX = b.Left - 8
	room := b.Left
	if sz.Stacked {
		b.Left, b.Right, b.LabelX, b.Anchor, b.rowH, room = 0, sz.Width*stackedBars, 0, "start", stackedRowH, sz.Width
	}
	b.LabelChars = min(most, int(room/charWidth)-1)
	return b
}

// row is where the i-th row's label and bar stand, from top.
func (b barRows) row(i int, top float64) (labelY, barY float64) {
	labelY = top + float64(i)*b.rowH
	if b.Stacked {
		return labelY, labelY + stackedBarY
	}
	return labelY, labelY
}

// bottom is the end of n rows from top.
func (b barRows) bottom(n int, top float64) float64 { return top + float64(n)*b.rowH }

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

// histogramView is a histogram of the runs' bars side by side in each bin (template
// "histogram"), its axes titled; Empty when it has nothing to count.
type histogramView struct {
	plotArea
	Label, XTitle, YTitle string // Label names the chart for a screen reader
	YTicks                []tick
	Bins                  []bin
	Bars                  []bar
	Empty                 bool
}

type bin struct {
	Center float64
	Label  string
}

type bar struct {
	X, Y, Width, Height float64
	Colour, Title       string
}

// histogram draws counts[run][bin] at one size, the bins labelled by labels (every other one
// when a bin is too narrow for its label, the last always), a bar's tooltip by title.
func histogram(sz size, counts [][]int, labels []string, title func(run, bin int) string) histogramView {
	v := histogramView{plotArea: newPlotArea(sz), Empty: true}
	most := 0
	for _, run := range counts {
		for _, n := range run {
			most = max(most, n)
		}
	}
	if most == 0 {
		return v
	}
	v.Empty = false
	// The axis ends on a tick at or above the highest bar, so that no bar rises past it.
	step, _ := niceScale(float64(most))
	step = math.Max(step, 1) // whole episodes
	top := step * math.Ceil(float64(most)/step)
	for y := 0.0; y <= top+step/2; y += step {
		v.YTicks = append(v.YTicks, tick{Pos: v.y(y / top), Label: fmt.Sprintf("%.0f", y)})
	}
	bins := len(labels)
	group := (v.Right - v.Left) / float64(bins)
	barW := group * 0.8 / float64(len(counts))
	for b, label := range labels {
		if group >= minBinLabel || b%2 == 0 || b == bins-1 {
			v.Bins = append(v.Bins, bin{Center: v.x((float64(b) + 0.5) / float64(bins)), Label: label})
		}
		for i := range counts {
			h := (v.Bottom - v.Top) * float64(counts[i][b]) / top
			v.Bars = append(v.Bars, bar{X: v.Left + group*float64(b) + group*0.1 + barW*float64(i), Y: v.Bottom - h,
				Width: barW, Height: h, Colour: palette[i%len(palette)], Title: title(i, b)})
		}
	}
	return v
}

// gridView is a grid of coloured cells, a row a task or a model and a column a run or a source
// (template "grid"): the rows' labels left of their cells, or above them when the cells would
// not fit beside the labels.
type gridView struct {
	size
	Label                           string // names the chart for a screen reader
	Width, Height                   float64
	LabelX                          float64
	Anchor                          string
	CellWidth, CellHeight, CellMid  float64
	Columns                         []gridColumn
	Rows                            []gridRow
	labelChars                      int
	cellsLeft, rowH, labelH, rowTop float64
}

type gridColumn struct {
	X             float64
	Label, Colour string
}

type gridRow struct {
	Y, LabelY float64
	Label     string
	Cells     []gridCell
}

type gridCell struct {
	X                 float64
	Fill, Text, Title string
}

// Grid geometry: at full size; narrower, the labels take gridLabelShare of the width and the
// cells share the rest, gridMinCellW at least; when even those do not fit, the labels stand
// above their cells (gridLabelH higher), which share the whole width.
const (
	gridLabelW     = 240
	gridCellW      = 80
	gridLabelShare = 0.36
	gridMinCellW   = 48
	gridCellH      = 22
	gridLabelH     = 18
	gridTop        = 30
)

// newGrid lays out a grid of rows at sz under columns, each in its colour, with no row yet
// (addRow adds them).
func newGrid(sz size, label string, columns, colours []string, rows int) gridView {
	n := float64(len(columns))
	labelW, cellW, room := float64(gridLabelW), float64(gridCellW), float64(gridLabelW)
	v := gridView{size: sz, Label: label, CellHeight: gridCellH, Anchor: "end", rowH: gridCellH, rowTop: gridTop}
	switch {
	case labelW+cellW*n+10 <= sz.Width:
	case sz.Width*gridLabelShare+gridMinCellW*n+10 <= sz.Width:
		labelW = sz.Width * gridLabelShare
		cellW, room = min(cellW, (sz.Width-labelW-10)/n), labelW
	default:
		labelW, v.Anchor, v.labelH = 0, "start", gridLabelH
		cellW, room = max(gridMinCellW, min(cellW, (sz.Width-10)/n)), sz.Width
	}
	chars := min(maxLabel, int(room/charWidth)-1)
	v.rowH += v.labelH
	v.Width, v.Height = labelW+cellW*n+10, gridTop+v.rowH*float64(rows)+10
	v.LabelX, v.CellWidth, v.CellMid, v.cellsLeft, v.labelChars = max(labelW-8, 0), cellW, cellW/2, labelW, chars
	for i, c := range columns {
		v.Columns = append(v.Columns, gridColumn{X: labelW + cellW*(float64(i)+0.5), Label: c, Colour: colours[i]})
	}
	return v
}

// addRow adds a row labelled label (cut to the room it has) of cells, one a column, whose X
// it sets.
func (v *gridView) addRow(label string, cells []gridCell) {
	labelY := v.rowTop + v.rowH*float64(len(v.Rows))
	for i := range cells {
		cells[i].X = v.cellsLeft + v.CellWidth*float64(i)
	}
	v.Rows = append(v.Rows,
		gridRow{Y: labelY + v.labelH, LabelY: labelY, Label: OneLine(label, v.labelChars), Cells: cells})
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
