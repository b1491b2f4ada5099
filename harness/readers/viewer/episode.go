package viewer

import (
	"bytes"
	"fmt"
	"io"
	"time"

	"github.com/aa-grade/aa-grade/harness/readers/report"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// Turn is one model call of an episode as the page shows it: the harness's messages before
// it, the reply, and the results of the reply's calls (which the next call's input holds).
type Turn struct {
	N       int
	Summary bool // a call that summarised the history, not a turn
	At      time.Time
	// Since is the time from the previous call's reply to this one's: the previous turn's
	// commands and this call, retries included. Zero for the first call.
	Since     time.Duration
	Prompts   []model.Message // the system and task prompts (the first call)
	Harness   []model.Message // turn warnings, nudges, summaries: the harness speaking
	Orphans   []model.Message // tool results that answer no call of the previous reply
	Text      string
	Reasoning string
	// HiddenReasoning says the provider returned reasoning only encrypted or redacted.
	HiddenReasoning bool
	Calls           []Call
	Usage           model.Usage
	Error           string   // the call failed
	Retries         []string // the attempts retried before this call was answered, each with why
	Notes           []string // other events of the call: usage not reported, a divergence, throttling
}

// Call is one tool call of a reply and its result.
type Call struct {
	ID, Name  string
	Arguments string
	Command   string // the shell command, when the arguments hold one
	// HasResult says the call's result was recorded: in the next call's input, or, after the
	// last turn, in the line of the messages no call sent (trajectories written before that
	// line was have none).
	HasResult bool
	Result    model.Message
	Shell     *promptset.ShellOutput // the result read as a shell result, when it is one
}

// AgentEnd is how the agent of an agent run's episode ended, as the page shows it.
type AgentEnd struct {
	runfolder.AgentRecord
	Out, Err promptset.Stream // what it printed, as a command's output shows
}

// readTurns reads a trajectory, streaming it: the raw requests and responses (every request
// carries the whole conversation, most of the file's bytes, and the turn records already hold
// what the page shows of them) go by unparsed, and only turn records, the last turn's unsent
// results, an agent's end and the small events (retry, no_usage, throttle, divergence, stripped) are
// read. Problems (a damaged line, a cut file) are returned beside what could be read. Shell
// results are read back in the words of prompts, the set the run used (nil: the built-in
// one); a result they do not fit shows as the text the model read.
func readTurns(r io.Reader, prompts *promptset.Set) ([]Turn, *AgentEnd, []string) {
	var turns []Turn
	var agent *AgentEnd
	var problems []string
	var pending Turn // the events seen since the last turn record
	var prev time.Time
	tr := runfolder.NewTrajectoryReader(r,
		func(k model.EventKind) bool { return k != model.KindRequest && k != model.KindResponse })
	for line := range tr.Lines() {
		if err := line.Err; err != nil {
			if line.Whole { // a line too long: the reading goes on past it
				err = fmt.Errorf("%w, skipped", err)
			}
			problems = append(problems, fmt.Sprintf("trajectory line %d: %v", line.N, err))
			continue
		}
		blank := len(bytes.TrimSpace(line.Bytes)) == 0
		if !line.Whole && !blank {
			problems = append(problems,
				fmt.Sprintf("trajectory line %d is cut short (the episode is running, or was stopped)", line.N))
		}
		ev, err := line.Event()
		if blank || err != nil {
			if line.Whole && !blank {
				problems = append(problems, fmt.Sprintf("trajectory line %d is not JSON", line.N))
			}
			continue
		}
		switch ev.Kind {
		case model.KindTurn:
			rec, err := line.Turn()
			if err != nil {
				problems = append(problems, fmt.Sprintf("trajectory line %d: %v", line.N, err))
				continue
			}
			t := newTurn(rec, pending)
			if !prev.IsZero() && !rec.At.IsZero() {
				t.Since = rec.At.Sub(prev)
			}
			prev = rec.At
			if len(turns) > 0 {
				t.Orphans = attachResults(&turns[len(turns)-1], rec.Input, prompts)
			}
			turns = append(turns, t)
			pending = Turn{}
		case model.KindUnsent:
			rec, err := line.Unsent()
			if err != nil || len(turns) == 0 {
				problems = append(problems, fmt.Sprintf("trajectory line %d: results of no recorded turn", line.N))
				continue
			}
			for _, m := range attachResults(&turns[len(turns)-1], rec.Messages, prompts) {
				problems = append(problems, fmt.Sprintf("trajectory line %d: a result that answers no call of the last turn: %s",
					line.N, report.OneLine(m.Content, 200)))
			}
		case model.KindAgent:
			rec, err := line.Agent()
			if err != nil {
				problems = append(problems, fmt.Sprintf("trajectory line %d: %v", line.N, err))
				continue
			}
			agent = &AgentEnd{AgentRecord: rec, Out: promptset.Stream{Head: rec.Stdout}, Err: promptset.Stream{Head: rec.Stderr}}
		case model.KindRetry:
			pending.Retries = append(pending.Retries,
				fmt.Sprintf("attempt %d, waited %s: %s", ev.Attempt, ev.Wait.Round(time.Millisecond), ev.Error))
		case model.KindNoUsage:
			pending.Notes = append(pending.Notes,
				"the provider reported no token counts: this call's zeros are unknown, not free")
		case model.KindThrottle:
			pending.Notes = append(pending.Notes,
				fmt.Sprintf("rate limited: %s now allowed at once", english.Count(ev.MaxInFlight, "call")))
		case model.KindStripped:
			pending.Notes = append(pending.Notes, ev.Error)
		case model.KindDivergence:
			pending.Notes = append(pending.Notes, "replay diverged from the recording: "+ev.Error)
		}
	}
	if err := tr.Err(); err != nil {
		problems = append(problems, fmt.Sprintf("read the trajectory: %v", err))
	}
	return turns, agent, problems
}

// newTurn reads one turn record: the prompts of the first call, the harness's messages, and
// the reply with its reasoning.
func newTurn(rec runfolder.TurnRecord, events Turn) Turn {
	t := Turn{N: rec.Turn, Summary: rec.Summary, At: rec.At, Text: rec.Reply.Content, Usage: rec.Usage, Error: rec.Error,
		Retries: events.Retries, Notes: events.Notes}
	t.Reasoning, t.HiddenReasoning = model.Reasoning(rec.Reply.Opaque)
	for i, m := range rec.Input {
		// The prompts are the system messages a conversation begins with and the first user
		// message after them (an agent's CLI may send several system blocks).
		task := m.Role == model.RoleUser && i > 0 && i == len(t.Prompts) && t.Prompts[i-1].Role == model.RoleSystem
		switch {
		case (m.Role == model.RoleSystem && i == len(t.Prompts)) || task:
			t.Prompts = append(t.Prompts, m)
		case m.Role != model.RoleTool:
			t.Harness = append(t.Harness, m)
		}
	}
	for _, c := range rec.Reply.ToolCalls {
		call := Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
		call.Command, _ = model.ShellCommand(c.Arguments)
		t.Calls = append(t.Calls, call)
	}
	return t
}

// attachResults gives the calls of the previous turn their results from the next call's
// input, and returns the tool results that answer none of them.
func attachResults(prev *Turn, input []model.Message, prompts *promptset.Set) []model.Message {
	var orphans []model.Message
	for _, m := range input {
		if m.Role != model.RoleTool {
			continue
		}
		found := false
		for i := range prev.Calls {
			c := &prev.Calls[i]
			if c.ID == m.ToolCallID && !c.HasResult {
				c.HasResult, c.Result, found = true, m, true
				if out, ok := prompts.ReadShellResult(m.Content); ok && c.Command != "" {
					c.Shell = &out
				}
				break
			}
		}
		if !found {
			orphans = append(orphans, m)
		}
	}
	return orphans
}
