package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/readers/analysis"
)

// hostileAnalysis is an analysis whose every string came from an untrusted folder.
func hostileAnalysis() *analysis.Run {
	turn := 2
	eps := []analysis.Episode{
		{Task: "Scenario-<b>1</b>", Repeat: 1, Status: "ok", Score: 0.5, PartialCredit: 0.625, Trajectory: true, FirstHitTurn: &turn,
			FalsePositives: []analysis.FalsePositive{{Entity: "ns/Service/<script>alert(1)</script>|x", Class: analysis.ClassSymptom}},
			SourcesRead:    []string{"alerts"}, Commands: map[string]int{"listing": 2}},
		{Task: "Scenario-2", Repeat: 1, Status: "max_turns", Trajectory: true, Commands: map[string]int{}},
	}
	return &analysis.Run{Dir: "runs/<img src=x>", Model: "m<script>", Episodes: eps, Summary: analysis.Summarise(eps),
		Warnings: []string{"Scenario-3: ground truth: <bad>"}}
}

// TestAnalysisRendersEscaped: the analysis page and the report.md section show every value
// escaped, and the page loads nothing.
func TestAnalysisRendersEscaped(t *testing.T) {
	a := hostileAnalysis()
	var page bytes.Buffer
	if err := WriteAnalysisHTML(&page, []*analysis.Run{a, a}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<script", "<img", "<b>1"} {
		if strings.Contains(page.String(), bad) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	for _, want := range []string{"never", "1 / 2", "Per model, every run of it together"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if err := WriteAnalysisHTML(&page, nil); err == nil {
		t.Error("a page of no run was written")
	}
	var md bytes.Buffer
	r := &Run{Dir: "d", Analysis: a}
	if err := WriteMarkdown(&md, r); err != nil {
		t.Fatal(err)
	}
	section := md.String()[strings.Index(md.String(), "## Analysis"):]
	if !strings.Contains(section, `\<script\>alert(1)\</script\>\|x (symptom)`) {
		t.Errorf("report.md's analysis is not escaped:\n%s", section)
	}
	if !strings.Contains(section, "Partial credit **0.312** and NTAM 0.000 (SREGym's parameters) beside the gated score 0.250") || !strings.Contains(section, "| 2 | alerts |") {
		t.Errorf("report.md's analysis:\n%s", section)
	}
}

// TestHitChartAxisHoldsItsBars: with 33 episodes in one bin the axis reaches a tick at or
// above 33 (it once stopped at 27, under the bar), and the chart has a legend of its runs.
func TestHitChartAxisHoldsItsBars(t *testing.T) {
	c := newHitChart([]analysisRunView{{N: 1, Colour: "#000", Label: "m", NeverHit: 33, FirstHitTurns: []int{1, 2}}}, sizes[0])
	top := c.YTicks[len(c.YTicks)-1]
	for _, b := range c.Bars {
		if b.Y < top.Pos-1e-9 {
			t.Errorf("a bar rises to y %.1f, above the last tick %s at %.1f", b.Y, top.Label, top.Pos)
		}
	}
	if top.Label != "40" || len(c.YTicks) < 3 {
		t.Errorf("ticks %+v, want 0 to 40", c.YTicks)
	}
	var page bytes.Buffer
	if err := WriteAnalysisHTML(&page, []*analysis.Run{hostileAnalysis()}); err != nil {
		t.Fatal(err)
	}
	hits := page.String()[strings.Index(page.String(), "First turn that named a root cause"):]
	if i := strings.Index(hits, `<svg class="chart full" width="1100"`); i < 0 || !strings.Contains(hits[:i], `class="legend"`) {
		t.Error("the first-hit chart has no legend")
	}
}

// TestAnalysisPageShowsNTAM: the page has the NTAM column the text output has, for each run
// and, when runs share a model, for the model.
func TestAnalysisPageShowsNTAM(t *testing.T) {
	a := hostileAnalysis()
	a.Summary.NTAM = 0.4375
	var page bytes.Buffer
	if err := WriteAnalysisHTML(&page, []*analysis.Run{a, a}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(page.String(), ">NTAM</th>"); n != 2 {
		t.Errorf("%d NTAM column headers, want 2 (the runs' and the models')", n)
	}
	if n := strings.Count(page.String(), `<td class="n">0.438</td>`); n != 2 {
		t.Errorf("%d cells of NTAM 0.438, want one a run", n)
	}
}
