package runfolder

// Run is a run folder as read: what ran, and the episodes that finished.
type Run struct {
	Dir    string
	Header Header
	// Results holds the last line of results.jsonl of each episode.
	Results map[Episode]Result
	// Warnings name the lines of results.jsonl that were skipped, file and line number.
	Warnings []string
}

// Read reads the run folder dir: ErrNotRunFolder when it holds no run, ErrCorrupt when its
// run.json is not a header (see ReadHeader and readResults for what else is tolerated).
func Read(dir string) (*Run, error) {
	h, err := ReadHeader(dir)
	if err != nil {
		return nil, err
	}
	results, warnings, err := readResults(dir)
	if err != nil {
		return nil, err
	}
	return &Run{Dir: dir, Header: h, Results: results, Warnings: warnings}, nil
}
