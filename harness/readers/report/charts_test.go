package report

import (
	"strings"
	"testing"
)

// TestGridFitsEachSize: a grid of six columns (the sources read) keeps its labels left of the
// cells where they fit and stacks them above the cells on a phone; at every size the cells and
// the longest label fit the chart's width.
func TestGridFitsEachSize(t *testing.T) {
	columns := []string{"alerts", "events", "objects", "logs", "traces", "metrics"}
	colours := make([]string, len(columns))
	long := strings.Repeat("anthropic/claude-opus-4-7 ", 4)
	for _, sz := range sizes {
		v := newGrid(sz, "test", columns, colours, 2)
		v.addRow(long, make([]gridCell, len(columns)))
		v.addRow("m", make([]gridCell, len(columns)))
		if want := sz.Stacked; (v.Anchor == "start") != want {
			t.Errorf("%s: labels anchored at their %s, want stacked %v", sz.Name, v.Anchor, want)
		}
		last := v.Rows[0].Cells[len(columns)-1]
		if right := last.X + v.CellWidth; right > v.Width || v.Width > sz.Width {
			t.Errorf("%s: cells end at %.0f in a chart %.0f wide, drawn for %.0f", sz.Name, right, v.Width, sz.Width)
		}
		labelW := float64(len([]rune(v.Rows[0].Label))) * charWidth
		if v.Anchor == "end" && v.LabelX-labelW < 0 || v.Anchor == "start" && labelW > sz.Width {
			t.Errorf("%s: the label %q (%.0f px) does not fit", sz.Name, v.Rows[0].Label, labelW)
		}
		if r := v.Rows[1]; r.Y < r.LabelY+v.labelH || r.LabelY < v.Rows[0].Y+v.CellHeight {
			t.Errorf("%s: the second row (label at %.0f, cells at %.0f) overlaps the first", sz.Name, r.LabelY, r.Y)
		}
	}
}

// TestBarRowsLabelsFit: the labels of a chart of bars, cut to the room they have, fit left of
// the bars or, stacked, above them.
func TestBarRowsLabelsFit(t *testing.T) {
	for _, sz := range sizes {
		b := newBarRows(sz, maxLabel)
		labelW := float64(b.LabelChars) * charWidth
		if b.Anchor == "end" && b.LabelX-labelW < 0 || b.Anchor == "start" && labelW > sz.Width {
			t.Errorf("%s: labels of %d characters do not fit (label at %.0f, anchored at its %s)", sz.Name,
				b.LabelChars, b.LabelX, b.Anchor)
		}
		if labelY, barY := b.row(1, 10); sz.Stacked && barY-labelY < stackedBarY || b.Right > sz.Width {
			t.Errorf("%s: a bar at %.0f under its label at %.0f, bars end at %.0f", sz.Name, barY, labelY, b.Right)
		}
	}
}
