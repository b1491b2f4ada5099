package report

import (
	"bytes"
	"fmt"
	"io"
	"path/filepath"

	"github.com/aa-grade/aa-grade/harness/readers/analysis"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
)

// Files of a run folder the reports write.
const (
	ParquetFile  = "results.parquet"
	MarkdownFile = "report.md"
	HTMLFile     = "report.html"
)

// WriteFolder reads the run folder dir and writes its three reports into it, each replaced
// whole, so a report that was there stays readable until the new one is complete. With the
// dataset's tasks (nil: none), report.md and report.html summarise the run's analysis too. It
// returns the run as read, for a caller that prints it too.
func WriteFolder(dir string, tasks []analysis.Task) (*Run, error) {
	r, err := Load(dir)
	if err != nil {
		return nil, err
	}
	if tasks != nil {
		if r.Analysis, err = analysis.NewAnalyzer().Folder(r.folder, tasks); err != nil {
			// the score and the results matter more: report them without it
			r.AnalysisErr = fmt.Errorf("analyse the run: %w", err)
		}
	}
	for _, f := range []struct {
		name  string
		write func(io.Writer) error
	}{
		{ParquetFile, func(w io.Writer) error { return WriteParquet(w, r) }},
		{MarkdownFile, func(w io.Writer) error { return WriteMarkdown(w, r) }},
		{HTMLFile, func(w io.Writer) error { return WriteHTML(w, []*Run{r}) }},
	} {
		var b bytes.Buffer
		if err := f.write(&b); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, f.name), b.Bytes()); err != nil {
			return nil, fmt.Errorf("write the reports: %w", err)
		}
	}
	return r, nil
}
