package report

import (
	"errors"

	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// Finish writes what follows a run's episodes into its folder dir, the same after a run and
// after a merge: the rate limits its model calls met, when it made any, through folder (the
// run's, still locked; a merge, which calls no model, passes nil and no rates), then the
// reports, with the run's analysis when the dataset's tasks are given. A rate-limit record or
// an analysis that fails does not fail the finish, since the score and the results matter
// more: the run returned says why in RateLimitsErr or AnalysisErr (when the reports fail too,
// the error says both).
func Finish(dir string, folder *runfolder.Folder, rates ratelimit.Status, tasks []analysis.Task) (*Run, error) {
	var ratesErr error
	if !rates.Idle() {
		ratesErr = folder.RecordRateLimits(rates)
	}
	run, err := WriteFolder(dir, tasks)
	if err != nil {
		return nil, errors.Join(err, ratesErr)
	}
	run.RateLimitsErr = ratesErr
	return run, nil
}
