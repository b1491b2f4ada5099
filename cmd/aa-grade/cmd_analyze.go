package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/internal/english"
)

// analyzeOptions are the flags of aa-grade analyze.
type analyzeOptions struct {
	flagsSet
	dataset string
	json    bool
	html    string
	ntam    analysis.NTAMParams
}

func (o *analyzeOptions) flags() []cli.Flag {
	return []cli.Flag{
		datasetFlag(&o.dataset),
		jsonFlag(&o.json, "print the analysis as JSON"),
		&cli.StringFlag{Name: "html", Destination: &o.html,
			Usage: "also write the analysis as one self-contained HTML page to this file"},
		&cli.FloatFlag{Name: "ntam-alpha", Value: analysis.DefaultNTAM.Alpha, Destination: &o.ntam.Alpha,
			Usage: "NTAM: the weight of a node"},
		&cli.FloatFlag{Name: "ntam-omega", Value: analysis.DefaultNTAM.Omega, Destination: &o.ntam.Omega,
			Usage: "NTAM: how the weight of each later answer shrinks"},
		&cli.FloatFlag{Name: "ntam-tau", Value: analysis.DefaultNTAM.Tau, Destination: &o.ntam.Tau,
			Usage: "NTAM: how credit shrinks per edge from the nearest root cause"},
		&cli.FloatFlag{Name: "ntam-gamma", Value: analysis.DefaultNTAM.Gamma, Destination: &o.ntam.Gamma,
			Usage: "NTAM: the penalty on answers more or fewer than the root causes"},
	}
}

// Validate refuses NTAM parameters its formula cannot take: a weight of 0 or less divides by
// nothing, a shrink rate outside (0, 1] or a negative penalty inverts what it means.
func (o *analyzeOptions) Validate() error {
	switch p := o.ntam; {
	case p.Alpha <= 0:
		return usageErrorf("--ntam-alpha %v: must be above 0", p.Alpha)
	case p.Omega <= 0 || p.Omega > 1:
		return usageErrorf("--ntam-omega %v: must be above 0 and at most 1", p.Omega)
	case p.Tau <= 0 || p.Tau > 1:
		return usageErrorf("--ntam-tau %v: must be above 0 and at most 1", p.Tau)
	case p.Gamma < 0:
		return usageErrorf("--ntam-gamma %v: must be 0 or more", p.Gamma)
	}
	return nil
}

func newAnalyzeCommand() *cli.Command {
	var opts analyzeOptions
	return &cli.Command{
		Name:      "analyze",
		Usage:     "partial credit, why answers were wrong and how the investigation went, runs side by side",
		ArgsUsage: "RUN|SUBMISSIONS...",
		Description: "Each argument is a run folder of aa-grade run or a folder of another harness's submissions\n" +
			"or ATIF trajectories (laid out as for aa-grade grade). Answers are mapped to ground-truth groups by the " +
			"deterministic rules.\n" +
			"Per episode: the gated score, partial credit on the fault graph, the class of each false positive\n" +
			"(symptom, mechanism, near_miss, unrelated) and, from a run's trajectories, the first turn that named\n" +
			"a root cause, the evidence sources read, commands by kind, failed, truncated and repeated commands.\n" +
			"The formula and the classes: docs/analysis.md. A run is analysed against the dataset it ran on,\n" +
			"at the commit it recorded, unless --dataset is given; submissions against --dataset.\n\n" +
			"Example: aa-grade analyze runs/opus runs/qwen --html analysis.html",
		Flags:  opts.flags(),
		Action: action(&opts, runAnalyze),
	}
}

func runAnalyze(ctx context.Context, opts analyzeOptions, args []string, con console) error {
	if len(args) == 0 {
		return usageErrorf("analyze needs at least one RUN or SUBMISSIONS folder; see aa-grade analyze --help")
	}
	stderr := con.err
	an := analysis.NewAnalyzer()
	an.NTAM = opts.ntam
	var runs []*analysis.Run
	var skipped []error // the folders that could not be analysed: the others still are
	for _, dir := range args {
		r, err := analyzeFolder(ctx, an, opts, dir, stderr)
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			skipped = append(skipped, repairHint(err))
			continue
		}
		runs = append(runs, r)
	}
	first := 0 // with no folder analysed, the first one's error ends the command, its kind the exit code
	if len(runs) == 0 {
		first = 1
	}
	for _, s := range skipped[first:] {
		printLine(stderr, "warning: skipped %v", s)
	}
	if len(runs) == 0 {
		return skipped[0]
	}
	if opts.html != "" {
		if err := writeHTML(opts.html, func(w io.Writer) error { return report.WriteAnalysisHTML(w, runs) }); err != nil {
			return err
		}
	}
	if opts.json {
		if err := printJSON(con.out, runs); err != nil {
			return err
		}
	} else {
		renderAnalysisText(con.out, runs, columns(con.out))
	}
	if len(skipped) > 0 {
		return badResult(fmt.Errorf("%s not analysed; see the warnings above", english.Count(len(skipped), "folder")))
	}
	return nil
}

// analyzeFolder analyses one run folder or folder of submissions, printing its problems.
func analyzeFolder(ctx context.Context, an *analysis.Analyzer, opts analyzeOptions, dir string,
	stderr io.Writer) (*analysis.Run, error) {
	in, err := openGradeInput(ctx, dir, opts.dataset, opts.isSet("dataset"))
	if err != nil {
		return nil, err
	}
	defer in.close()
	var gradeOpts grader.GradeOptions
	if in.run != nil {
		gradeOpts.Repeats = in.run.Header.Repeats
	}
	results, problems, err := in.grade(ctx, gradeOpts)
	if err != nil {
		return nil, err
	}
	for _, p := range append(in.problems, problems...) {
		printLine(stderr, "%s: %s: %s", p.Level, dir, p.Message)
	}
	var r *analysis.Run
	if len(in.atif.Episodes) > 0 {
		r = an.AnalyzeATIF(dir, in.atif, analysisTasks(in.ds), results)
	} else {
		r = an.Analyze(dir, in.run, analysisTasks(in.ds), results)
	}
	for _, w := range r.Warnings {
		printLine(stderr, "warning: %s: %s", dir, w)
	}
	return r, nil
}

// analysisTasks pairs each task's ground truth with its snapshot folder (for the traces).
func analysisTasks(ds *data.Dataset) []analysis.Task {
	tasks := make([]analysis.Task, len(ds.Tasks))
	for i, gt := range gradeTasks(ds) {
		tasks[i] = analysis.Task{Task: gt, Snapshot: ds.Tasks[i].Dir}
	}
	return tasks
}

// renderAnalysisText prints one row per folder, then one per model when several folders share
// one, fitted to a terminal cols wide (0: any width).
func renderAnalysisText(w io.Writer, runs []*analysis.Run, cols int) {
	t := newTable("RUN", "MODEL", "EPISODES", "SCORE", "PARTIAL", "NTAM",
		"FALSE POSITIVES (symptom/mechanism/near_miss/unrelated)", "FIRST HIT", "MEDIAN TURN", "SOURCES", "FAILED",
		"TRUNCATED", "REPEATED", "MODEL/TOOL s")
	for _, r := range runs {
		s := r.Summary
		t.row(report.OneLine(r.Dir, 50), report.OneLine(r.Model, 40), fmt.Sprint(s.Episodes),
			fmt.Sprintf("%.3f", s.Score), fmt.Sprintf("%.3f", s.PartialCredit), fmt.Sprintf("%.3f", s.NTAM),
			classCounts(s), firstHits(s), medianTurn(s), coverage(s), fmt.Sprint(s.Failed), fmt.Sprint(s.Truncated),
			fmt.Sprint(s.Repeated), fmt.Sprintf("%.0f/%.0f", s.ModelSeconds, s.ToolSeconds))
	}
	t.write(w, cols)
	if models := analysis.ByModel(runs); len(models) < len(runs) {
		fmt.Fprintln(w)
		t = newTable("MODEL", "RUNS", "EPISODES", "SCORE", "PARTIAL", "NTAM", "FALSE POSITIVES", "FIRST HIT",
			"MEDIAN TURN")
		for _, m := range models {
			t.row(report.OneLine(m.Model, 50), fmt.Sprint(m.Runs), fmt.Sprint(m.Episodes), fmt.Sprintf("%.3f", m.Score),
				fmt.Sprintf("%.3f", m.PartialCredit), fmt.Sprintf("%.3f", m.NTAM), classCounts(m.Summary),
				firstHits(m.Summary), medianTurn(m.Summary))
		}
		t.write(w, cols)
	}
}

func classCounts(s analysis.Summary) string {
	parts := make([]string, len(analysis.Classes))
	for i, c := range analysis.Classes {
		parts[i] = fmt.Sprint(s.FalsePositives[c])
	}
	return strings.Join(parts, "/")
}

// firstHits is how many episodes with a trajectory named a root cause at some turn.
func firstHits(s analysis.Summary) string {
	if s.WithTrajectory == 0 {
		return "-"
	}
	return fmt.Sprintf("%d/%d", s.FirstHits, s.WithTrajectory)
}

func medianTurn(s analysis.Summary) string {
	if s.MedianFirstHitTurn == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f", *s.MedianFirstHitTurn)
}

// coverage lists the sources read by at least one episode, with the share of episodes that did.
func coverage(s analysis.Summary) string {
	var parts []string
	for _, src := range analysis.Sources {
		if v := s.SourceCoverage[src]; v > 0 {
			parts = append(parts, fmt.Sprintf("%s %.0f%%", src, 100*v))
		}
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, ", ")
}
