package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness"
)

// Header is run.json.
type Header struct {
	Version       string   `json:"version"`
	Revision      string   `json:"revision,omitempty"` // the VCS revision aa-grade was built from
	Dataset       string   `json:"dataset"`
	DatasetCommit string   `json:"dataset_commit,omitempty"` // for a Hub dataset, the commit resolved`
	Tasks         []string `json:"tasks"`
	Repeats       int      `json:"repeats"`
	Shard         string   `json:"shard,omitempty"` // "I/N" for one of N shards
	Model         string   `json:"model"`
	// BaseURL is where the model was called (never the key). A resume does not compare it: the
	// same model behind another proxy or mirror is the same experiment.
	BaseURL         string    `json:"base_url,omitempty"`
	ReasoningEffort string    `json:"reasoning_effort,omitempty"`
	MaxTokens       int       `json:"max_tokens,omitempty"`
	ContextWindow   int64     `json:"context_window,omitempty"`
	MaxTurns        int       `json:"max_turns"`
	CommandTimeout  string    `json:"command_timeout"`
	Sandbox         string    `json:"sandbox"`
	PromptSHA256    string    `json:"prompt_sha256"` // of the prompt set (harness.Prompts.SHA256)
	Judge           string    `json:"judge,omitempty"`
	Started         time.Time `json:"started"`
	// Prices are the run's token prices (null: unknown), the latest when a resume changed them.
	// A resume does not compare them: prices change no episode, each line of results.jsonl
	// keeps the cost computed when it was written, and correcting a price must not make paid
	// episodes run again.
	Prices *harness.Prices `json:"prices"`
}

// ReadHeader reads the run folder dir's run.json; unknown fields are ignored, so folders
// written by newer versions still read.
func ReadHeader(dir string) (Header, error) {
	path := filepath.Join(dir, HeaderFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Header{}, err
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Header{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// ErrConfigChanged marks a resume whose configuration differs from the run folder's.
var ErrConfigChanged = errors.New("the run folder holds a run with another configuration")

func writeHeader(cfg Config) error {
	h := Header{Version: Version, Revision: revision(), Dataset: cfg.DatasetSpec, DatasetCommit: cfg.DatasetCommit, Repeats: cfg.Repeats,
		Shard: cfg.Shard.String(), Model: cfg.ModelSpec, BaseURL: cfg.BaseURL, ReasoningEffort: cfg.ReasoningEffort,
		MaxTokens: cfg.MaxTokens, ContextWindow: cfg.ContextWindow, MaxTurns: cfg.MaxTurns,
		CommandTimeout: cfg.CommandTimeout.String(), Sandbox: cfg.Backend.Name(),
		PromptSHA256: cfg.Prompts.SHA256(), Prices: cfg.Prices, Judge: cfg.Judge, Started: time.Now().UTC()}
	for _, t := range cfg.Tasks {
		h.Tasks = append(h.Tasks, t.ID)
	}
	prev, err := ReadHeader(cfg.Out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	if err == nil {
		if diff := prev.differences(h); len(diff) > 0 {
			return fmt.Errorf("%w (%s): use another --out, or the same flags", ErrConfigChanged, strings.Join(diff, "; "))
		}
		h.Started = prev.Started
	}
	return writeJSON(filepath.Join(cfg.Out, HeaderFile), h)
}

// HeaderFile is a run folder's header; SummaryFile its summary (the schema of grade --json).
const (
	HeaderFile  = "run.json"
	SummaryFile = "summary.json"
)

// writeJSON writes one of the run folder's JSON files, indented for people to read.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// revision is the VCS revision of this build ("" when unknown), with "+dirty" for a build from
// a modified tree.
func revision() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range info.Settings {
		switch {
		case s.Key == "vcs.revision":
			rev = s.Value
		case s.Key == "vcs.modified" && s.Value == "true":
			dirty = "+dirty"
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// differences names the fields whose change would mix two experiments in one run.
func (h Header) differences(o Header) []string {
	var out []string
	check := func(field string, a, b any) {
		if fmt.Sprint(a) != fmt.Sprint(b) {
			out = append(out, fmt.Sprintf("%s was %v, now %v", field, a, b))
		}
	}
	check("dataset", h.Dataset, o.Dataset)
	check("dataset_commit", h.DatasetCommit, o.DatasetCommit)
	check("tasks", h.Tasks, o.Tasks)
	check("repeats", h.Repeats, o.Repeats)
	check("shard", h.Shard, o.Shard)
	check("model", h.Model, o.Model)
	check("reasoning_effort", h.ReasoningEffort, o.ReasoningEffort)
	check("max_tokens", h.MaxTokens, o.MaxTokens)
	check("context_window", h.ContextWindow, o.ContextWindow)
	check("max_turns", h.MaxTurns, o.MaxTurns)
	check("command_timeout", h.CommandTimeout, o.CommandTimeout)
	check("sandbox", h.Sandbox, o.Sandbox)
	check("prompt_sha256", h.PromptSHA256, o.PromptSHA256)
	check("judge", h.Judge, o.Judge)
	return out
}
