package runfolder

import (
	"bufio"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// Header is run.json.
type Header struct {
	Version       string   `json:"version"`
	Revision      string   `json:"revision,omitempty"` // the VCS revision aa-grade was built from
	Dataset       string   `json:"dataset"`
	DatasetCommit string   `json:"dataset_commit,omitempty"` // for a Hub dataset, the commit resolved`
	Tasks         []string `json:"tasks"`
	Selection              // how the tasks were chosen among those asked for: --limit, --sample, --seed
	Repeats       int      `json:"repeats"`
	Shard         string   `json:"shard,omitempty"` // "I/N" for one of N shards
	Model         string   `json:"model"`
	// BaseURL is where the model was called (never the key). A resume does not compare it: the
	// same model behind another proxy or mirror is the same experiment.
	BaseURL         string `json:"base_url,omitempty"`
	ReasoningEffort string `json:"reasoning_effort,omitempty"`
	// Settings are what the episodes were played with, their fields run.json's (max_tokens,
	// context_window, loop, max_turns, command_timeout) but the prompt set, which is
	// prompt_sha256 and PromptsFile: SetSettings writes them, EpisodeSettings reads them back.
	// Loop is reference or lenient; runs recorded before it was followed the lenient one
	// (LoopName).
	settings.Settings
	Sandbox string `json:"sandbox"`
	// Image is the image the episodes ran in (docker, or bwrap over an image) and ImageDigest
	// its config digest; Python the versions of the reference sandbox's packages the
	// episodes' environment had ("" for missing). Runs written before they were recorded
	// leave them empty, and then they are not compared.
	Image        string            `json:"image,omitempty"`
	ImageDigest  string            `json:"image_digest,omitempty"`
	Python       map[string]string `json:"python,omitempty"`
	PromptSHA256 string            `json:"prompt_sha256"` // of the prompt set (promptset.Set.SHA256)
	Judge        string            `json:"judge,omitempty"`
	Started      time.Time         `json:"started"`
	// Prices are the run's token prices (null: unknown), the latest when a resume changed them.
	// A resume does not compare them: prices change no episode, each line of results.jsonl
	// keeps the cost computed when it was written, and correcting a price must not make paid
	// episodes run again.
	Prices *model.Prices `json:"prices"`
	// Agent is the agent that played the episodes of an agent run (run --agent) in place of
	// aa-grade's loop; nil for the loop's runs.
	Agent *AgentInfo `json:"agent,omitempty"`
	// RateLimits are the model's rate limits as the run's limiter knew them at its end (given
	// and learnt from the provider's answers) and the calls and 429s of the last process that
	// ran in the folder (Folder.RecordRateLimits); a resume keeps them until it records its own.
	RateLimits *ratelimit.Status `json:"rate_limits,omitempty"`
	// MergedFrom names the run folders aa-grade merge joined into this one, as it was given
	// them, every merge into it included: a merge into a folder merge wrote completes it.
	MergedFrom []string `json:"merged_from,omitempty"`
	// Repaired, set when aa-grade repair rebuilt a lost or unreadable run.json, says what the
	// folder did not hold: the fields taken from repair's flags or left unknown.
	Repaired string `json:"repaired,omitempty"`
	// Unknown names the fields aa-grade repair could not know (sandbox, max_turns, ...): left
	// unset, a refusal names them "unknown" rather than the zero value they would read as.
	Unknown []string `json:"unknown,omitempty"`
}

// AgentInfo is the agent of an agent run, as run.json records it.
type AgentInfo struct {
	Spec     string `json:"spec"`              // as --agent named it: claude-code, command:CMD, ...
	Version  string `json:"version,omitempty"` // what the agent printed for its version, when it has a command for it
	Timeout  string `json:"timeout"`           // its wall time per episode
	Protocol string `json:"protocol"`          // the API it called the gateway with
	// Command and Env are how a CLI agent is started, its adapter's settings: the command line
	// (the prompt, model, gateway and token are in variables it names) and the variables the
	// adapter sets beside the ones every agent gets (docs/agents.md). None for command:CMD.
	Command string   `json:"command,omitempty"`
	Env     []string `json:"env,omitempty"`
	// Dir is the folder of --agent-dir on this machine, and Install the CLI of this machine
	// that a sandbox lacking its own was shown, read-only ("": the sandbox's own).
	Dir     string `json:"dir,omitempty"`
	Install string `json:"install,omitempty"`
	// ProviderTools says the agent's calls could hold the tools a provider runs itself (web
	// search, fetch, MCP, code execution: run --allow-provider-tools), which the gateway
	// refuses otherwise: such a run compares with no other.
	ProviderTools bool `json:"provider_tools,omitempty"`
}

// String names the agent and its version, a program's command by its first line, at most 80
// characters (run.json keeps it whole).
func (a *AgentInfo) String() string {
	if a == nil {
		return "aa-grade's loop"
	}
	spec, rest, cut := strings.Cut(a.Spec, "\n")
	if runes := []rune(spec); len(runes) > 80 {
		spec, cut = string(runes[:80]), true
	}
	if cut && rest+spec != "" {
		spec += " …"
	}
	if a.Version == "" {
		return spec
	}
	return spec + " " + a.Version
}

// providerTools is ProviderTools, false for no agent.
func (a *AgentInfo) providerTools() bool { return a != nil && a.ProviderTools }

// key is what makes two agents the same: the whole spec and the version.
func (a *AgentInfo) key() string {
	if a == nil {
		return ""
	}
	return a.Spec + "\x00" + a.Version
}

// maxHeaderBytes bounds run.json, which a folder from elsewhere may make huge: a real one
// holds a few hundred task ids at most.
const maxHeaderBytes = 4 << 20

// ReadHeader reads the run folder dir's run.json; unknown fields are ignored, so folders
// written by newer versions still read. A path with no run.json is ErrNotRunFolder; a run.json
// that is not a header (cut, not JSON, no model, not a regular file, too large) is ErrCorrupt,
// naming the file.
func ReadHeader(dir string) (Header, error) {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist) || (err == nil && !info.IsDir()):
		return Header{}, fmt.Errorf("%s: %w (no %s)", dir, ErrNotRunFolder, HeaderFile)
	case err != nil:
		return Header{}, fmt.Errorf("read the run folder: %w", err)
	}
	path := filepath.Join(dir, HeaderFile)
	b, err := safefile.ReadPath(path, maxHeaderBytes)
	switch {
	case errors.Is(err, fs.ErrNotExist) && holdsEpisodes(dir):
		return Header{}, &HeaderError{Dir: dir, Err: errHeaderLost}
	case errors.Is(err, fs.ErrNotExist):
		return Header{}, fmt.Errorf("%s: %w (no %s)", dir, ErrNotRunFolder, HeaderFile)
	case errors.Is(err, safefile.ErrNotRegular), errors.Is(err, safefile.ErrTooLarge):
		return Header{}, &HeaderError{Dir: dir, Err: err}
	case err != nil:
		return Header{}, fmt.Errorf("read %s: %w", path, err)
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return Header{}, &HeaderError{Dir: dir, Err: cutShort(err, len(b))}
	}
	if h.Model == "" {
		return Header{}, &HeaderError{Dir: dir, Err: errors.New("names no model")}
	}
	return h, nil
}

// errHeaderLost is a folder holding a run's results or episodes but no run.json.
var errHeaderLost = fmt.Errorf("no %s beside its %s or %s/", HeaderFile, ResultsFile, EpisodesDir)

// HeaderError is a run folder whose run.json is lost or cannot be read as a header; it is
// ErrCorrupt, and carries the folder so that a command can name the repair.
type HeaderError struct {
	Dir string
	Err error
}

func (e *HeaderError) Error() string {
	if errors.Is(e.Err, errHeaderLost) {
		return fmt.Sprintf("%v: %s: %v", ErrCorrupt, e.Dir, e.Err)
	}
	return fmt.Sprintf("%v: %s: %v", ErrCorrupt, filepath.Join(e.Dir, HeaderFile), e.Err)
}

func (e *HeaderError) Unwrap() []error { return []error{ErrCorrupt, e.Err} }

// cutShort words a JSON error at the end of n bytes as a file cut short, which "unexpected
// end of JSON input" alone does not say.
func cutShort(err error, n int) error {
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) && syntax.Offset >= int64(n) {
		return fmt.Errorf("cut short after %d bytes (%w)", n, err)
	}
	return err
}

// holdsEpisodes says whether dir holds what only a run writes: episodes/, or a results.jsonl
// whose first line is a result (someone's own results.jsonl is no run's).
func holdsEpisodes(dir string) bool {
	if info, err := os.Lstat(filepath.Join(dir, EpisodesDir)); err == nil && info.IsDir() {
		return true
	}
	f, err := os.Open(filepath.Join(dir, ResultsFile))
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	line, _, err := nextLine(bufio.NewReader(f), maxResultLine, errLongResult)
	if err != nil {
		return false
	}
	_, err = parseResult(line)
	return err == nil
}

// errLongResult is a line of results.jsonl past maxResultLine.
var errLongResult = fmt.Errorf("longer than %d bytes", maxResultLine)

// legacyLoop is the loop of runs recorded before the loop was: aa-grade's own, now the
// lenient loop.
const legacyLoop = settings.LoopLenient

// LoopName is the loop the run's episodes followed.
func (h Header) LoopName() string {
	if h.Loop == "" {
		return string(legacyLoop)
	}
	return string(h.Loop)
}

// Comparable reports whether the run's scores compare with the published leaderboard: only
// a run of the reference loop does, not an agent's, and not one whose model was called with
// parameters of the user's.
func (h Header) Comparable() bool {
	return h.LoopName() == "reference" && h.Agent == nil && h.Params.IsZero()
}

// ResumeDifferences names what a resume of the run h with the configuration o refuses: the
// Differences, but for growth. A run grows by more repeats, or by tasks beside all of its own,
// when nothing else changes: its episodes are kept and the new ones played. A shard's run does
// not grow: more episodes would deal them to the shards anew.
func (h Header) ResumeDifferences(o Header) []string {
	grown := h
	if h.Shard == "" && o.Repeats >= h.Repeats {
		grown.Repeats = o.Repeats
	}
	if h.Shard == "" && !slices.ContainsFunc(h.Tasks, func(id string) bool { return !slices.Contains(o.Tasks, id) }) {
		grown.Tasks = o.Tasks
	}
	return grown.Differences(o)
}

// Differences names the fields whose change would mix two experiments in one run: a merge
// refuses runs that differ in any of them, and a resume any but growth (ResumeDifferences).
func (h Header) Differences(o Header) []string {
	var out []string
	// A field aa-grade repair could not know differs from every value, its zero value included:
	// a resume that took it for the same would write a guess into run.json as if it were known.
	check := func(field string, a, b any) {
		was, now := fmt.Sprint(h.known(field, a)), fmt.Sprint(o.known(field, b))
		if was != now {
			was, now = cmp.Or(was, "none"), cmp.Or(now, "none") // an empty value said, not left blank
			out = append(out, fmt.Sprintf("%s was %s, now %s", field, was, now))
		}
	}
	check("dataset", h.Dataset, o.Dataset)
	check("dataset_commit", h.DatasetCommit, o.DatasetCommit)
	check("tasks", h.Tasks, o.Tasks)
	check("limit", h.Limit, o.Limit)
	check("sample", h.Sample, o.Sample)
	check("seed", h.Seed, o.Seed)
	check("repeats", h.Repeats, o.Repeats)
	check("shard", h.Shard, o.Shard)
	check("model", h.Model, o.Model)
	check("reasoning_effort", h.ReasoningEffort, o.ReasoningEffort)
	check("max_tokens", h.MaxTokens, o.MaxTokens)
	check("context_window", h.ContextWindow, o.ContextWindow)
	check("loop", h.LoopName(), o.LoopName())
	check("model_params", paramsText(h.Params), paramsText(o.Params))
	if h.Agent.key() != o.Agent.key() {
		out = append(out, fmt.Sprintf("agent was %s, now %s", h.Agent, o.Agent))
	}
	check("agent's provider_tools", h.Agent.providerTools(), o.Agent.providerTools())
	check("max_turns", h.MaxTurns, o.MaxTurns)
	check("command_timeout", h.CommandTimeout, o.CommandTimeout)
	check("sandbox", h.Sandbox, o.Sandbox)
	check("prompt_sha256", h.PromptSHA256, o.PromptSHA256)
	check("judge", h.Judge, o.Judge)
	if h.Python != nil && o.Python != nil { // both recorded their environment
		check("image_digest", h.ImageDigest, o.ImageDigest)
		check("python", h.Python, o.Python) // fmt prints maps sorted by key
	}
	return out
}

// known is a field's value as a refusal names it: "unknown" for a field aa-grade repair could not
// know that is still unset (its zero value; the loop unnamed, which reads as lenient), the value
// otherwise (one the user wrote in since).
func (h Header) known(field string, v any) any {
	if !slices.Contains(h.Unknown, field) {
		return v
	}
	unset := reflect.ValueOf(v).IsZero()
	if field == "loop" {
		unset = h.Loop == ""
	}
	if unset {
		return "unknown"
	}
	return v
}

// paramsText is the model's parameters as a resume's refusal names them, "none" for none.
func paramsText(p model.Params) string {
	if p.IsZero() {
		return "none"
	}
	return p.String()
}
