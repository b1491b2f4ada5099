package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/sandbox"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// The finish tool, as the reference agent library defines it: the model hands back files
// (here agent_output.json, which must exist) with a reason.
const (
	FinishToolName = "finish"
	SubmissionFile = "agent_output.json"
)

var finishTool = Tool{
	Name: FinishToolName,
	Description: "Call when the investigation is done and " + SubmissionFile + " is written in the working directory. " +
		"Give the reason you are finished and the paths of the files you hand back.",
	Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string"},"paths":{"type":"array","items":{"type":"string"}}},"required":["reason","paths"]}`),
}

var shellTool = Tool{Name: sandbox.ShellToolName, Description: sandbox.ShellToolDescription, Parameters: sandbox.ShellToolParameters}

// Loop limits of the reference harness.
const (
	DefaultMaxTurns = 100
	warningTurns    = 20   // remaining-turn warnings appear in the last 20 turns
	summariseAt     = 0.70 // share of the context window that triggers summarisation
)

// Messages the harness itself sends the model.
const (
	continueMessage = "Continue the investigation with the tools. When " + SubmissionFile +
		" is written, call the " + FinishToolName + " tool to submit it."
	refuseTwoFinish = "Call the " + FinishToolName + " tool only once per turn; this turn's calls were refused."
	summaryRequest  = "The conversation is about to be shortened to fit your context window. Write a structured summary " +
		"of the investigation so far, with these sections: Goal; Progress (what you have examined and found); " +
		"Current state (files written, hypotheses standing); Next steps; Key facts (entity names, timestamps, " +
		"error messages, file paths, exact values). Everything you do not write here will be lost. Do not call tools."
	summaryPrefix = "Summary of your investigation so far (the earlier conversation was replaced by it):\n\n"
	summaryAck    = "Continue the investigation from this summary."
)

// turnsLeftMessage is the warning before each of the last turns.
func turnsLeftMessage(left int) string {
	if left == 1 {
		return "This is your last turn. Calling the " + FinishToolName + " tool needs this turn: call it now if " + SubmissionFile + " is written."
	}
	return fmt.Sprintf("You have %d turns left, this one included. Calling the %s tool needs a turn of its own.", left, FinishToolName)
}

// Episode statuses, as the grader records them.
const (
	StatusOK           = grader.StatusOK
	StatusNoSubmission = grader.StatusNoSubmission
	StatusMaxTurns     = grader.StatusMaxTurns
	StatusError        = grader.StatusError
)

// Episode is one model investigating one snapshot.
type Episode struct {
	Model          Model
	Sandbox        sandbox.Sandbox
	MaxTurns       int
	CommandTimeout time.Duration
	SystemPrompt   string
	TaskPrompt     string
	// ContextWindow, in tokens, sets when the history is summarised (at 70%); 0 never.
	ContextWindow int64
	// OnTurn, when set, hears about every model call (for progress and trajectories).
	OnTurn func(turn int, req Request, reply Reply, err error)
}

// Outcome is how an episode ended.
type Outcome struct {
	Status     string
	Turns      int // model calls, summaries not counted
	ToolCalls  int
	Summaries  int      // times the history was summarised
	Submission []byte   // agent_output.json as submitted
	Entities   []string // the entities the submission names, as the grader reads them
	Usage      Usage
	ModelTime  time.Duration
	ToolTime   time.Duration
	Err        error // for StatusError
}

// Run plays the episode to its end: a submission, the turn cap, or an error.
func (e *Episode) Run(ctx context.Context) Outcome {
	maxTurns := e.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	timeout := e.CommandTimeout
	if timeout <= 0 {
		timeout = sandbox.DefaultCommandTimeout
	}
	var out Outcome
	messages := []Message{{Role: RoleSystem, Content: e.SystemPrompt}, {Role: RoleUser, Content: e.TaskPrompt}}
	tools := []Tool{shellTool, finishTool}
	for turn := 1; turn <= maxTurns; turn++ {
		if left := maxTurns - turn + 1; left <= warningTurns {
			messages = append(messages, Message{Role: RoleUser, Content: turnsLeftMessage(left)})
		}
		req := Request{Messages: messages, Tools: tools}
		began := time.Now()
		reply, err := e.Model.Complete(ctx, req)
		out.ModelTime += time.Since(began)
		out.Turns = turn
		if e.OnTurn != nil {
			e.OnTurn(turn, req, reply, err)
		}
		if errors.Is(err, ErrContextOverflow) {
			// Summarise the newer half of the history (the whole no longer fits) and try the
			// turn once more.
			if messages, err = e.summarise(ctx, recentHalf(messages), tools, turn, &out); err == nil {
				if left := maxTurns - turn + 1; left <= warningTurns {
					messages = append(messages, Message{Role: RoleUser, Content: turnsLeftMessage(left)})
				}
				req = Request{Messages: messages, Tools: tools}
				began = time.Now()
				reply, err = e.Model.Complete(ctx, req)
				out.ModelTime += time.Since(began)
				if e.OnTurn != nil {
					e.OnTurn(turn, req, reply, err)
				}
			}
		}
		if err != nil {
			out.Status, out.Err = StatusError, err
			return out
		}
		out.Usage.Add(reply.Usage)
		reply.Message.Role = RoleAssistant
		messages = append(messages, reply.Message)
		if calls := reply.Message.ToolCalls; len(calls) == 0 {
			messages = append(messages, Message{Role: RoleUser, Content: continueMessage})
		} else {
			messages = append(messages, e.runCalls(ctx, calls, timeout, &out)...)
			if out.Submission != nil {
				out.Status = StatusOK
				return out
			}
			if err := ctx.Err(); err != nil {
				out.Status, out.Err = StatusError, err
				return out
			}
		}
		if e.ContextWindow > 0 && float64(reply.Usage.Input+reply.Usage.Output) >= summariseAt*float64(e.ContextWindow) {
			if messages, err = e.summarise(ctx, messages, tools, turn, &out); err != nil {
				out.Status, out.Err = StatusError, err
				return out
			}
		}
	}
	out.Status = StatusMaxTurns
	return out
}

// summarise asks the model, with the tools still attached, for a structured summary of the
// investigation, and replaces the history with the system prompt, the task prompt, that
// summary and a short acknowledgement. Earlier summaries go with the rest of the history. The
// call is not a turn. The acknowledgement is a user message, as in the reference harness:
// a history ending on an assistant message would make the next call a prefill, whose reply
// the model writes as a continuation of the harness's words and thinking models refuse.
func (e *Episode) summarise(ctx context.Context, messages []Message, tools []Tool, turn int, out *Outcome) ([]Message, error) {
	req := Request{Messages: append(append([]Message(nil), messages...), Message{Role: RoleUser, Content: summaryRequest}), Tools: tools, Summary: true}
	began := time.Now()
	reply, err := e.Model.Complete(ctx, req)
	out.ModelTime += time.Since(began)
	if e.OnTurn != nil {
		e.OnTurn(turn, req, reply, err)
	}
	if err != nil {
		return nil, fmt.Errorf("summarise the history: %w", err)
	}
	out.Usage.Add(reply.Usage)
	out.Summaries++
	return []Message{
		messages[0], messages[1],
		{Role: RoleUser, Content: summaryPrefix + reply.Message.Content},
		{Role: RoleUser, Content: summaryAck},
	}, nil
}

// recentHalf keeps the system and task prompts and the newer half of the rest of the history,
// starting at an assistant message so that no tool result loses its call.
func recentHalf(messages []Message) []Message {
	if len(messages) <= 2 {
		return messages
	}
	start := 2 + (len(messages)-2)/2
	for start < len(messages) && messages[start].Role != RoleAssistant {
		start++
	}
	return append(append([]Message(nil), messages[:2]...), messages[start:]...)
}

// runCalls runs one turn's tool calls one after another in the order given, the finish call
// last; two finish calls are both refused. It returns the tool results, in call order; a
// finish call that succeeds puts the submission in out.
func (e *Episode) runCalls(ctx context.Context, calls []ToolCall, timeout time.Duration, out *Outcome) []Message {
	var finishes []int
	for i, c := range calls {
		if c.Name == FinishToolName {
			finishes = append(finishes, i)
		}
	}
	results := make([]Message, len(calls))
	order := make([]int, 0, len(calls))
	for i, c := range calls {
		if c.Name != FinishToolName {
			order = append(order, i)
		}
	}
	order = append(order, finishes...)
	for _, i := range order {
		c := calls[i]
		out.ToolCalls++
		result := Message{Role: RoleTool, ToolCallID: c.ID}
		began := time.Now()
		switch {
		case c.Name == sandbox.ShellToolName:
			result.Content, result.IsError = e.shell(ctx, c.Arguments, timeout)
		case c.Name == FinishToolName && len(finishes) > 1:
			result.Content, result.IsError = refuseTwoFinish, true
		case c.Name == FinishToolName:
			if doc, entities, err := e.finish(ctx, c.Arguments); err != nil {
				result.Content, result.IsError = err.Error(), true
			} else {
				out.Submission, out.Entities = doc, entities
				result.Content = "Submitted " + SubmissionFile + "."
			}
		default:
			result.Content, result.IsError = fmt.Sprintf("Unknown tool %q: the tools are %s and %s.", c.Name, sandbox.ShellToolName, FinishToolName), true
		}
		out.ToolTime += time.Since(began)
		results[i] = result
	}
	return results
}

// shell runs a code_exec call.
func (e *Episode) shell(ctx context.Context, arguments string, timeout time.Duration) (string, bool) {
	var args struct {
		Cmd *string `json:"cmd"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || args.Cmd == nil {
		return fmt.Sprintf("Invalid arguments for %s: expected {\"cmd\": \"<bash command>\"}, got %.200s", sandbox.ShellToolName, arguments), true
	}
	res, err := e.Sandbox.Run(ctx, *args.Cmd, timeout)
	if err != nil {
		return "<shell_results><error_kind>sandbox</error_kind><details>" + err.Error() + "</details></shell_results>", true
	}
	return res.ShellResults(timeout), false
}

// finish checks a finish call: the paths it hands back must be files of the workspace, and
// agent_output.json must be there and readable as a diagnosis. The sandbox opens them as it
// sees them (see Sandbox.ReadFile): a link, a FIFO or a device the model made cannot reach
// or stall the host. A refusal goes back to the model, which may try again.
func (e *Episode) finish(ctx context.Context, arguments string) ([]byte, []string, error) {
	var args struct {
		Reason string   `json:"reason"`
		Paths  []string `json:"paths"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, nil, fmt.Errorf("invalid arguments for %s: expected {\"reason\": \"...\", \"paths\": [\"%s\"]}", FinishToolName, SubmissionFile)
	}
	doc, sub, err := grader.ReadSubmissionWith(func(limit int64) ([]byte, error) {
		return e.Sandbox.ReadFile(ctx, SubmissionFile, limit)
	})
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil, fmt.Errorf("%s is not in the working directory: write it, then call %s again", SubmissionFile, FinishToolName)
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return nil, nil, fmt.Errorf("%s is %v: write the file itself, then call %s again", SubmissionFile, err, FinishToolName)
	case errors.Is(err, grader.ErrInvalidSubmission):
		return nil, nil, fmt.Errorf("%s cannot be read as a diagnosis (%v); fix it, then call %s again", SubmissionFile, err, FinishToolName)
	case err != nil:
		return nil, nil, fmt.Errorf("cannot read %s: %v", SubmissionFile, err)
	}
	for _, p := range args.Paths {
		rel := p
		if filepath.IsAbs(p) {
			rel, _ = filepath.Rel(e.Sandbox.Workdir(), p)
		}
		rel = filepath.Clean(rel)
		if rel == ".." || strings.HasPrefix(rel, "../") {
			return nil, nil, fmt.Errorf("cannot hand back %s: it is outside the working directory", p)
		}
		if err := e.Sandbox.CheckFile(ctx, rel); err != nil {
			return nil, nil, fmt.Errorf("cannot hand back %s: %s", p, fileProblem(err))
		}
	}
	return doc, sub.Names, nil
}

// fileProblem says to the model why a path it hands back is refused.
func fileProblem(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "no such file in the working directory"
	case errors.Is(err, safefile.ErrNotRegular):
		return "not a regular file"
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return err.Error()
	}
	return err.Error()
}
