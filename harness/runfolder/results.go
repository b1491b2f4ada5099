package runfolder

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Result is one line of results.jsonl.
type Result struct {
	Task   string  `json:"task"`
	Repeat int     `json:"repeat"`
	Status string  `json:"status"`
	Score  float64 `json:"score"`
	TP     int     `json:"tp"`
	FP     int     `json:"fp"`
	// RootCauses and RootCausesFound are the episode's recall, for the summary.
	RootCauses      int `json:"root_causes"`
	RootCausesFound int `json:"root_causes_found"`
	// EntitiesDropped counts the distinct entities past grader.MaxEntities: not graded,
	// counted in FP.
	EntitiesDropped int         `json:"entities_dropped,omitempty"`
	Turns           int         `json:"turns"`
	ToolCalls       int         `json:"tool_calls"`
	Tokens          model.Usage `json:"tokens"`
	CostUSD         *float64    `json:"cost_usd"` // null when the model's prices are unknown
	Duration        float64     `json:"duration_s"`
	ModelTime       float64     `json:"model_s"`
	ToolTime        float64     `json:"tool_s"`
	Retries         int         `json:"retries"` // model calls retried, all attempts counted
	// ProviderTools counts an agent's requests refused for holding a tool the provider runs
	// itself (web search, fetch, MCP, code execution).
	ProviderTools int    `json:"provider_tools_refused,omitempty"`
	Error         string `json:"error,omitempty"`
	// Matcher, JudgeNote and Rules say who graded the episode (grader.Verdict).
	Matcher   string             `json:"matcher,omitempty"`
	JudgeNote string             `json:"judge_note,omitempty"`
	Rules     *grader.RulesGrade `json:"rules,omitempty"`
}

// Final reports whether a result stands: error, unfinished and cost_limit episodes run again
// on resume.
func (r Result) Final() bool {
	return r.Status != grader.StatusError && r.Status != grader.StatusUnfinished && r.Status != grader.StatusCostLimit
}

// Episode is the episode the result is of.
func (r Result) Episode() Episode { return Episode{r.Task, r.Repeat} }

// maxResultLine bounds a line of results.jsonl (a real one is about 1 kB): a longer line is
// reported and skipped without being held in memory.
const maxResultLine = 1 << 20

// readResults reads the results.jsonl of the run folder dir (none when there is no such file).
// The last line of an episode wins (a resumed episode's line follows its earlier attempt's).
// A last line with no newline that is not a result is what a run killed while writing leaves:
// it is skipped in silence. Any other line that is not a result is skipped with a warning
// naming the file and the line, so a damaged file still reads but the damage is seen.
func readResults(dir string) (map[Episode]Result, []string, error) {
	done := map[Episode]Result{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("read the run folder: %w", err)
	}
	defer root.Close()
	f, err := safefile.Open(root, ResultsFile) // never a FIFO: opening one would block
	if errors.Is(err, fs.ErrNotExist) {
		return done, nil, nil
	}
	path := filepath.Join(dir, ResultsFile)
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer f.Close()
	var warnings []string
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, whole, err := nextLine(r, maxResultLine, errLongLine)
		if errors.Is(err, io.EOF) {
			return done, warnings, nil
		}
		if err != nil && !errors.Is(err, errLongLine) {
			return nil, nil, fmt.Errorf("read %s: %w", path, err)
		}
		if err == nil && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		var res Result
		if err == nil {
			res, err = parseResult(line)
		}
		switch {
		case err == nil:
			done[res.Episode()] = res
		case whole:
			warnings = append(warnings, fmt.Sprintf("%s:%d: skipped, not a result: %v", path, n, err))
		}
	}
}

// errLongLine marks a line longer than maxResultLine.
var errLongLine = fmt.Errorf("longer than %d bytes", maxResultLine)

// parseResult reads one line of results.jsonl; a line that is JSON but names no episode is no
// result either.
func parseResult(line []byte) (Result, error) {
	var r Result
	if err := json.Unmarshal(line, &r); err != nil {
		return Result{}, err
	}
	if r.Task == "" || r.Repeat < 1 {
		return Result{}, fmt.Errorf("no task and repeat (task %q, repeat %d)", r.Task, r.Repeat)
	}
	return r, nil
}
