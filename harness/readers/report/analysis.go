package report

import (
	"bufio"
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/internal/english"
	"github.com/aa-grade/aa-grade/internal/version"
)

//go:embed analysis.html.tmpl
var analysisSource string

// analysisPage holds the analysis section (template "analysis"), which report.html embeds,
// and the page of `aa-grade analyze --html` around it (template "page").
var analysisPage = parsePage("analysis.html", analysisSource)

// classColours colour the false-positive classes, in analysis.Classes order.
var classColours = []string{"#e15759", "#f28e2b", "#59a14f", "#bab0ac"}

// maxListedEpisodes bounds the per-episode table of report.md.
const maxListedEpisodes = 200

// writeAnalysisMarkdown writes report.md's analysis section for one run.
func writeAnalysisMarkdown(bw *bufio.Writer, a *analysis.Run) {
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }
	s := a.Summary
	p("\n## Analysis\n\nAnswers mapped by the deterministic rules; partial credit and classes as docs/analysis.md " +
		"defines them.\n\n")
	p("- Partial credit **%.3f** and NTAM %.3f (SREGym's parameters) beside the gated score %.3f, over %s.\n",
		s.PartialCredit, s.NTAM, s.Score, english.Count(s.Episodes, "episode"))
	var fps []string
	for _, c := range analysis.Classes {
		fps = append(fps, fmt.Sprintf("%d %s (%.0f%%)", s.FalsePositives[c], c, 100*s.FalsePositiveShares[c]))
	}
	p("- False positives: %s.\n", strings.Join(fps, ", "))
	if s.WithTrajectory > 0 {
		median := "none"
		if s.MedianFirstHitTurn != nil {
			median = fmt.Sprintf("%.1f", *s.MedianFirstHitTurn)
		}
		p("- A turn named a root cause in %d of %s; median first-hit turn %s.\n", s.FirstHits,
			english.Count(s.WithTrajectory, "episode"), median)
		var cov []string
		for _, src := range analysis.Sources {
			cov = append(cov, fmt.Sprintf("%s %.0f%%", src, 100*s.SourceCoverage[src]))
		}
		p("- Sources read (share of episodes): %s.\n", strings.Join(cov, ", "))
		var kinds []string
		for _, k := range analysis.CommandKinds {
			if n := s.Commands[k]; n > 0 {
				kinds = append(kinds, fmt.Sprintf("%d %s", n, k))
			}
		}
		p("- Commands: %s; %d failed, %s, %d repeated.\n", orNone(strings.Join(kinds, ", ")), s.Failed,
			english.Count(s.Truncated, "truncated output"), s.Repeated)
		p("- Time: %.0f s in the model, %.0f s in tools.\n", s.ModelSeconds, s.ToolSeconds)
	}
	for _, w := range a.Warnings {
		p("- Not analysed: %s\n", mdText(w, 300))
	}
	p("\n| task | repeat | status | score | partial credit | false positives | first hit turn | sources read |\n" +
		"|---|---:|---|---:|---:|---|---:|---|\n")
	for i, e := range a.Episodes {
		if i == maxListedEpisodes {
			p("\nand %s more (aa-grade analyze --json lists them all).\n", english.Count(len(a.Episodes)-i, "episode"))
			break
		}
		var fp []string
		for _, f := range e.FalsePositives {
			fp = append(fp, mdText(f.Entity, 80)+" ("+f.Class+")")
		}
		if note := grader.DroppedNote(e.EntitiesDropped); note != "" {
			fp = append(fp, note)
		}
		hit := "-"
		if e.FirstHitTurn != nil {
			hit = fmt.Sprint(*e.FirstHitTurn)
		}
		p("| %s | %d | %s | %.3f | %.3f | %s | %s | %s |\n", mdText(e.Task, 80), e.Repeat, mdText(e.Status, 40), e.Score,
			e.PartialCredit, orNone(strings.Join(fp, ", ")), hit, orNone(strings.Join(e.SourcesRead, ", ")))
	}
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteAnalysisHTML writes the page of `aa-grade analyze --html`: the analysis of the runs
// side by side, self-contained.
func WriteAnalysisHTML(w io.Writer, runs []*analysis.Run) error {
	if len(runs) == 0 {
		return fmt.Errorf("write the analysis page: no run")
	}
	v := newAnalysisView(runs)
	v.Version = version.Version
	if err := analysisPage.ExecuteTemplate(w, "page", v); err != nil {
		return fmt.Errorf("write the analysis page: %w", err)
	}
	return nil
}

// analysisSection renders the analysis section report.html embeds; empty without analyses.
func analysisSection(runs []*analysis.Run) (template.HTML, error) {
	if len(runs) == 0 {
		return "", nil
	}
	var b bytes.Buffer
	if err := analysisPage.ExecuteTemplate(&b, "analysis", newAnalysisView(runs)); err != nil {
		return "", fmt.Errorf("write the analysis section: %w", err)
	}
	return template.HTML(b.String()), nil // html/template escaped every value in it
}

type analysisView struct {
	Title, Version string
	Runs           []analysisRunView
	Models         []modelRow // when several runs share a model
	Classes        []legendItem
	Kinds          []string
	// Each chart is drawn at each of the sizes, in their order.
	Hits     []histogramView
	FPs      []fpView
	Coverage []gridView
}

type analysisRunView struct {
	N                  int
	Colour, Label, Dir string
	Summary            analysis.Summary
	Classes            []int // false positives per class, in analysis.Classes order
	FalsePositives     int
	Commands           []int // per kind, in analysis.CommandKinds order
	FirstHit, Median   string
	ModelS, ToolS      string
	HasTrajectory      bool
	FirstHitTurns      []int
	NeverHit           int // episodes with a trajectory where no turn named a root cause
	Warnings           []string
	MoreWarnings       int
}

// modelRow is one model's runs together, when several runs share a model.
type modelRow struct {
	Model                string
	Runs, Episodes       int
	Score, PartialCredit float64
	NTAM                 float64
	Shares               []string // of false positives, in analysis.Classes order
}

type legendItem struct {
	Label, Colour string
}

func newAnalysisView(runs []*analysis.Run) analysisView {
	v := analysisView{Title: "ITBench-AA analysis: " + OneLine(runs[0].Model+" "+runs[0].Dir, maxLabel),
		Kinds: analysis.CommandKinds}
	if len(runs) > 1 {
		v.Title = fmt.Sprintf("ITBench-AA analysis: %d runs", len(runs))
	}
	for i, c := range analysis.Classes {
		v.Classes = append(v.Classes, legendItem{Label: c, Colour: classColours[i]})
	}
	for i, r := range runs {
		s := r.Summary
		rv := analysisRunView{N: i + 1, Colour: palette[i%len(palette)], Label: OneLine(cmp.Or(r.Model, r.Dir), maxLabel),
			Dir: OneLine(r.Dir, 120), Summary: s, FirstHit: "-", Median: "-", HasTrajectory: s.WithTrajectory > 0}
		for _, c := range analysis.Classes {
			rv.Classes = append(rv.Classes, s.FalsePositives[c])
			rv.FalsePositives += s.FalsePositives[c]
		}
		for _, k := range analysis.CommandKinds {
			rv.Commands = append(rv.Commands, s.Commands[k])
		}
		if rv.HasTrajectory {
			rv.FirstHit = fmt.Sprintf("%d / %d", s.FirstHits, s.WithTrajectory)
			rv.ModelS, rv.ToolS = fmt.Sprintf("%.0f", s.ModelSeconds), fmt.Sprintf("%.0f", s.ToolSeconds)
		}
		if s.MedianFirstHitTurn != nil {
			rv.Median = fmt.Sprintf("%.1f", *s.MedianFirstHitTurn)
		}
		for _, e := range r.Episodes {
			switch {
			case !e.Trajectory:
			case e.FirstHitTurn == nil:
				rv.NeverHit++
			default:
				rv.FirstHitTurns = append(rv.FirstHitTurns, *e.FirstHitTurn)
			}
		}
		for j, w := range r.Warnings {
			if j == maxListedIssues {
				rv.MoreWarnings = len(r.Warnings) - j
				break
			}
			rv.Warnings = append(rv.Warnings, OneLine(w, maxErrorText))
		}
		v.Runs = append(v.Runs, rv)
	}
	if models := analysis.ByModel(runs); len(models) < len(runs) {
		for _, m := range models {
			row := modelRow{Model: OneLine(m.Model, maxLabel), Runs: m.Runs, Episodes: m.Episodes, Score: m.Score,
				PartialCredit: m.PartialCredit, NTAM: m.NTAM}
			for _, c := range analysis.Classes {
				row.Shares = append(row.Shares, fmt.Sprintf("%.0f%%", 100*m.FalsePositiveShares[c]))
			}
			v.Models = append(v.Models, row)
		}
	}
	for _, sz := range sizes {
		v.Hits = append(v.Hits, newHitChart(v.Runs, sz))
		v.FPs = append(v.FPs, newFPChart(v.Runs, sz))
		v.Coverage = append(v.Coverage, newCoverageChart(runs, sz))
	}
	return v
}

// newHitChart is the distribution of first-hit turns: one bar per run in each bin of turns,
// and a last bin for the episodes where no turn named a root cause.
func newHitChart(runs []analysisRunView, sz size) histogramView {
	maxTurn := 1
	for _, r := range runs {
		for _, t := range r.FirstHitTurns {
			maxTurn = max(maxTurn, t)
		}
	}
	width := (maxTurn + hitBins - 1) / hitBins // turns per bin
	bins := (maxTurn+width-1)/width + 1        // the last bin: never
	counts := make([][]int, len(runs))
	for i, r := range runs {
		counts[i] = make([]int, bins)
		for _, t := range r.FirstHitTurns {
			counts[i][(t-1)/width]++
		}
		counts[i][bins-1] = r.NeverHit
	}
	var names []string
	for b := range bins {
		name := fmt.Sprintf("%d-%d", b*width+1, (b+1)*width)
		switch {
		case b == bins-1:
			name = "never"
		case width == 1:
			name = fmt.Sprint(b + 1)
		}
		names = append(names, name)
	}
	v := histogram(sz, counts, names, func(i, b int) string {
		r := runs[i]
		return fmt.Sprintf("R%d %s: %s, first hit at turn %s", r.N, r.Label, english.Count(counts[i][b], "episode"), names[b])
	})
	v.Label, v.XTitle, v.YTitle = "first-hit turn distribution", "first-hit turn", "episodes"
	return v
}

// hitBins is how many bins of turns the first-hit chart has at most, beside "never".
const hitBins = 10

// fpView shows each run's false positives as one bar split by class shares, at one size.
type fpView struct {
	barRows
	Height, NoteX float64
	Rows          []fpRow
}

type fpRow struct {
	LabelY, BarY float64
	Label        string
	Segments     []bar
	Note         string
}

func newFPChart(runs []analysisRunView, sz size) fpView {
	layout := newBarRows(sz, maxLabel)
	c := fpView{barRows: layout, Height: layout.bottom(len(runs), 10) + 10, NoteX: layout.Right + 8}
	width := layout.Right - layout.Left
	for i, r := range runs {
		row := fpRow{Label: OneLine(fmt.Sprintf("R%d %s", r.N, r.Label), layout.LabelChars),
			Note: english.Count(r.FalsePositives, "false positive")}
		row.LabelY, row.BarY = layout.row(i, 10)
		x := layout.Left
		for j, n := range r.Classes {
			if r.FalsePositives == 0 || n == 0 {
				continue
			}
			w := width * float64(n) / float64(r.FalsePositives)
			row.Segments = append(row.Segments, bar{X: x, Y: row.BarY, Width: w, Height: 18, Colour: classColours[j],
				Title: fmt.Sprintf("%s: %d (%.0f%%)", analysis.Classes[j], n, 100*float64(n)/float64(r.FalsePositives))})
			x += w
		}
		c.Rows = append(c.Rows, row)
	}
	return c
}

// newCoverageChart is a model x source grid: the share of episodes that read each source.
func newCoverageChart(runs []*analysis.Run, sz size) gridView {
	models := analysis.ByModel(runs)
	colours := make([]string, len(analysis.Sources))
	for i := range colours {
		colours[i] = "#222"
	}
	c := newGrid(sz, "source coverage per model", analysis.Sources, colours, len(models))
	for _, m := range models {
		name := OneLine(m.Model, maxLabel)
		var cells []gridCell
		for _, src := range analysis.Sources {
			share := m.SourceCoverage[src]
			cell := gridCell{Fill: "#eeeeee", Text: "-", Title: fmt.Sprintf("%s: no trajectory", name)}
			if m.WithTrajectory > 0 {
				// From white to the first palette colour (#4e79a7) as the share grows.
				mix := func(to int) int { return 255 - int(math.Round(share*float64(255-to))) }
				cell.Fill = fmt.Sprintf("#%02x%02x%02x", mix(0x4e), mix(0x79), mix(0xa7))
				cell.Text = fmt.Sprintf("%.0f%%", 100*share)
				cell.Title = fmt.Sprintf("%s: %s read in %.0f%% of %s", name, src, 100*share,
					english.Count(m.WithTrajectory, "episode"))
			}
			cells = append(cells, cell)
		}
		c.addRow(m.Model, cells)
	}
	return c
}

// analysesOf lists the analyses the runs have.
func analysesOf(runs []*Run) []*analysis.Run {
	var out []*analysis.Run
	for _, r := range runs {
		if r.Analysis != nil {
			out = append(out, r.Analysis)
		}
	}
	return out
}
