package main

import (
	"io"

	"github.com/aa-grade/aa-grade/harness/analysis"
	"github.com/aa-grade/aa-grade/harness/ratelimit"
	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runfolder"
)

// finishRun writes what follows a run's episodes into its folder dir, the same for run and
// merge: the rate limits its model calls met, when it made any, through folder (the run's,
// still locked; merge, which calls no model, passes nil and no rates), then the reports, with
// the run's analysis when the dataset's tasks are given. A rate-limit record or an analysis
// that fails is a warning on stderr: the score and the results matter more. It returns the
// run as the reports read it.
func finishRun(stderr io.Writer, dir string, folder *runfolder.Folder, rates ratelimit.Status, tasks []analysis.Task) (*report.Run, error) {
	if !rates.Idle() {
		if err := folder.RecordRateLimits(rates); err != nil {
			printLine(stderr, "warning: %v", err)
		}
	}
	run, err := report.WriteFolder(dir, tasks)
	if err != nil {
		return nil, err
	}
	if run.AnalysisErr != nil {
		printLine(stderr, "warning: the reports leave the analysis out: %v", run.AnalysisErr)
	}
	return run, nil
}
