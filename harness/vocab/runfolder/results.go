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
	"github.com/aa-grade/aa-grade/harness/vocab/model"
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
func readResults(dir string) (map[Episode]Result, []string, error) {
	done := map[Episode]Result{}
	warnings, err := readLines(dir, ResultsFile, maxResultLine, func(line []byte) error {
		res, err := parseResult(line)
		if err == nil {
			done[res.Episode()] = res
		}
		return err
	})
	if errors.Is(err, fs.ErrNotExist) {
		return done, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return done, warnings, nil
}

// readLines reads the lines of the run folder dir's JSON Lines file name (fs.ErrNotExist when
// there is none), each no longer than limit, handing each to take. A last line with no
// newline that take refuses is what a run killed while writing leaves: it is skipped in
// silence. Any other line take refuses, or longer than limit, is skipped with a warning naming
// the file and the line, so a damaged file still reads but the damage is seen.
func readLines(dir, name string, limit int, take func([]byte) error) ([]string, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("read the run folder: %w", err)
	}
	defer func() { _ = root.Close() }() // read only
	f, err := safefile.Open(root, name) // never a FIFO: opening one would block
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	path := filepath.Join(dir, name)
	if errors.Is(err, safefile.ErrNotRegular) {
		return nil, fmt.Errorf("%w: %s: %w", ErrCorrupt, dir, err)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	var warnings []string
	errLong := fmt.Errorf("longer than %d bytes", limit)
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		line, whole, err := nextLine(r, limit, errLong)
		if errors.Is(err, io.EOF) {
			return warnings, nil
		}
		if err != nil && !errors.Is(err, errLong) {
			return nil, fmt.Errorf("read %s: %w", path, err)
		}
		if err == nil && len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if err == nil {
			err = take(line)
		}
		if err != nil && whole {
			warnings = append(warnings, fmt.Sprintf("%s:%d: skipped, not a %s: %v", path, n, fileLines[name], err))
		}
	}
}

// fileLines names what a line of each JSON Lines file is, for the warnings.
var fileLines = map[string]string{ResultsFile: "result", SpendFile: "model call"}

// isResult and isCharge say whether a line is one of results.jsonl or spend.jsonl (repairLines).
func isResult(line []byte) bool { _, err := parseResult(line); return err == nil }
func isCharge(line []byte) bool { _, err := parseCharge(line); return err == nil }

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
