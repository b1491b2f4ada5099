package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// reportOptions are the flags of aa-grade report.
type reportOptions struct {
	flagsSet
	html string
	json bool
}

// Validate refuses an --html path that is a folder.
func (o *reportOptions) Validate() error {
	if info, err := os.Stat(o.html); o.html != "" && err == nil && info.IsDir() {
		return usageErrorf("--html %s: it is a folder; name the page's file", o.html)
	}
	return nil
}

func newReportCommand() *cli.Command {
	var opts reportOptions
	return &cli.Command{
		Name:      "report",
		Usage:     "compare run folders: one line per run, as text, JSON or a self-contained HTML page",
		ArgsUsage: "RUN...",
		Description: "Each RUN is a folder written by aa-grade run, finished or not: episodes not run yet count " +
			"as errors;\n" +
			"a folder of such folders (runs/) stands for the runs in it. A folder that is not a run, or whose\n" +
			"run.json is lost or broken, is named with why, and the others are reported.\n" +
			"Exit 1 when a run has episodes in error or not run, or a folder could not be read.\n\n" +
			"Example: aa-grade report runs/opus runs/qwen --html compare.html",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "html", Destination: &opts.html, Sources: env("html"),
				Usage: "also write the runs as one HTML page to this file"},
			jsonFlag(&opts.json, "print the runs as JSON"),
		},
		Action: action(&opts, runReport),
	}
}

func runReport(_ context.Context, opts reportOptions, dirs []string, con console) error {
	if len(dirs) == 0 {
		return usageErrorf("report needs at least one RUN folder or folder of runs; see aa-grade report --help")
	}
	ra := expandRuns(dirs)
	var runs []*report.Run
	for _, dir := range ra.dirs {
		r, err := report.Load(dir)
		if err != nil { // the other runs are still reported
			ra.skipped = append(ra.skipped, repairHint(err))
			continue
		}
		printSkipped(con.err, r.Warnings)
		runs = append(runs, r)
	}
	if len(runs) == 0 {
		return ra.none(con.err)
	}
	ra.printRunSkips(con.err)
	overviews := report.Overviews(runs)
	if opts.html != "" {
		if err := writeHTML(opts.html, func(w io.Writer) error { return report.WriteHTML(w, runs) }); err != nil {
			return err
		}
	}
	stdout := con.out
	if opts.json {
		if err := printJSON(stdout, overviews); err != nil {
			return err
		}
	} else {
		renderReportText(stdout, overviews, columns(stdout))
	}
	var bad []string
	if err := ra.skipError("reported"); err != nil {
		bad = append(bad, err.Error())
	}
	var incomplete []string
	for _, o := range overviews {
		if o.Errors > 0 {
			incomplete = append(incomplete,
				fmt.Sprintf("%s has %s in error or not run", o.Dir, english.Count(o.Errors, "episode")))
		}
	}
	if len(incomplete) > 0 {
		bad = append(bad,
			fmt.Sprintf("%s; run the same aa-grade run command again to play them", strings.Join(incomplete, "; ")))
	}
	if len(bad) > 0 {
		return badResult(errors.New(strings.Join(bad, "; ")))
	}
	return nil
}

// renderReportText prints one row per run, then each run against the first, fitted to a
// terminal cols wide (0: any width).
func renderReportText(w io.Writer, runs []report.Overview, cols int) {
	var b bytes.Buffer
	t := newTable("RUN", "MODEL", "SCORE", "95% CI", "EPISODES", "ERRORS", "COST", "$/TASK", "SPENT", "MEAN TURNS",
		"GRADING")
	for _, o := range runs {
		t.row(report.OneLine(o.Dir, 60), report.OneLine(o.Model, 60), fmt.Sprintf("%.3f%s", o.Score, o.SoFar()),
			o.CIText(), fmt.Sprint(o.Episodes), o.ErrorsText(), report.FormatUSD(o.CostUSD),
			report.FormatUSD(o.CostPerTask), o.SpentText(), fmt.Sprintf("%.1f", o.MeanTurns),
			report.OneLine(o.Grading, 60))
	}
	t.write(&b, cols)
	fmt.Fprintln(&b, "COST is what the scored episodes cost (the last attempt of each); SPENT what the run spent in "+
		"all, every model call of "+runfolder.SpendFile+".")
	for _, o := range runs {
		if o.Judge != nil {
			fmt.Fprintf(&b, "%s: %s\n", report.OneLine(o.Dir, 60), o.Agreement())
		}
		if o.ModelParams != "" {
			fmt.Fprintf(&b, "%s: model parameters %s, not comparable with the leaderboard\n", report.OneLine(o.Dir, 60),
				report.OneLine(o.ModelParams, 200))
		}
	}
	renderComparisonText(&b, runs, cols)
	fitText(w, b.String(), cols)
}

// renderComparisonText prints each run after the first against the first: the difference,
// its interval and p-value, and what the pairing left out.
func renderComparisonText(w io.Writer, runs []report.Overview, cols int) {
	if len(runs) < 2 {
		return
	}
	fmt.Fprintf(w, "\nAGAINST %s\n%s\n", report.OneLine(runs[0].Dir, 60), report.TestNote)
	t := newTable("RUN", "DIFFERENCE", "95% CI", "P-VALUE", "OVER")
	for _, o := range runs[1:] {
		v := o.VersusFirst
		t.row(report.OneLine(o.Dir, 60), fmt.Sprintf("%+.3f", v.Difference), v.IntervalText(), v.PValueText(),
			english.Count(v.Tasks, "task")+" x "+english.Count(v.Repeats, "repeat"))
	}
	t.write(w, cols)
	for _, o := range runs[1:] {
		if v := o.VersusFirst; v.NoInterval != "" {
			fmt.Fprintf(w, "%s: 95%% CI and p-value n/a: %s\n", report.OneLine(o.Dir, 60), v.NoInterval)
		}
	}
	for _, o := range runs[1:] {
		if v := o.VersusFirst; v.Warning != "" {
			fmt.Fprintf(w, "warning: %s against %s: %s; only the shared ones are compared\n", report.OneLine(o.Dir, 60),
				report.OneLine(runs[0].Dir, 60), v.Warning)
		}
	}
}
