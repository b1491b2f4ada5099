package main

import (
	"io"

	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// finishRun is report.Finish for run and merge, with what it could not do as warnings on
// stderr. It returns the run as the reports read it.
func finishRun(
	stderr io.Writer,
	dir string,
	folder *runfolder.Folder,
	rates ratelimit.Status,
	tasks []analysis.Task,
) (*report.Run, error) {
	run, err := report.Finish(dir, folder, rates, tasks)
	if err != nil {
		return nil, err
	}
	if run.RateLimitsErr != nil {
		warnLine(stderr, "warning: %v", run.RateLimitsErr)
	}
	if run.AnalysisErr != nil {
		warnLine(stderr, "warning: the reports leave the analysis out: %v", run.AnalysisErr)
	}
	return run, nil
}
