// Package harness runs episodes: a model investigates a sandboxed snapshot through the shell
// tool, turn by turn, and submits a diagnosis, exactly as the reference harness does.
package loop

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
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// Loop limits of the reference harness.
const (
	DefaultMaxTurns = 100
	// DefaultMaxTokens is the reference client's max_tokens (Stirrup 0.1.9's default): the
	// output cap every request carries, and the base of the summarisation threshold.
	DefaultMaxTokens = model.DefaultMaxTokens
	warningTurns     = 20   // remaining-turn warnings appear in the last 20 turns
	summariseAt      = 0.70 // share of max tokens (lenient: of the context window) that triggers summarisation
)

// lenient reports whether the episode follows the lenient loop.
func (e *Episode) lenient() bool { return e.Loop == settings.LoopLenient }

// Episode is one model investigating one snapshot.
type Episode struct {
	Model   model.Model
	Sandbox sandbox.Sandbox
	// Tools are what the sandbox offers, which the task prompt states.
	Tools sandbox.Tools
	// Settings are what the episode is played with: the turn cap, the loop followed and where
	// it summarises, the command timeout, every text the model sees.
	settings.Settings
	// OnTurn, when set, hears about every model call (for progress and trajectories).
	OnTurn func(turn int, req model.Request, reply model.Reply, err error)

	texts promptset.Texts // the prompt set with this episode's facts, set by Run
	// lost is why the sandbox can no longer be used (see noteLost), once it cannot.
	lost error
}

// Outcome is how an episode ended.
type Outcome struct {
	Status     string
	Turns      int // model calls, summaries not counted
	ToolCalls  int
	Summaries  int      // times the history was summarised
	Submission []byte   // agent_output.json as submitted
	Entities   []string // the entities the submission names, as the grader reads them
	Usage      model.Usage
	ModelTime  time.Duration
	ToolTime   time.Duration
	// ProviderTools counts an agent's requests the gateway refused for holding a tool the
	// provider runs itself (issue 42); 0 for the loop, which sends none.
	ProviderTools int
	Err           error  // for grader.StatusError
	Reason        string // why an episode that is neither ok nor an error ended, when there is more to say
	// Unsent are the results of the last turn's tool calls when the episode ended before a
	// model call sent them (a finish, the turn cap, an error): no turn's input records them.
	Unsent []model.Message
}

// Run plays the episode to its end: a submission, the turn cap, an ending the reference
// loop gives (a cut reply, an overflowing context) or an error.
func (e *Episode) Run(ctx context.Context) Outcome {
	maxTurns := e.MaxTurns
	if maxTurns <= 0 {
		maxTurns = DefaultMaxTurns
	}
	timeout := time.Duration(e.CommandTimeout)
	if timeout <= 0 {
		timeout = sandbox.DefaultCommandTimeout
	}
	var out Outcome
	e.texts = e.Prompts.ForEpisode(promptset.Facts{Workdir: e.Sandbox.Workdir(), Commands: e.Tools.Commands,
		Python: e.Tools.Python, MaxTurns: maxTurns, CommandTimeout: timeout})
	messages := []model.Message{{Role: model.RoleSystem, Content: e.texts.System()},
		{Role: model.RoleUser, Content: e.texts.Task()}}
	tools := e.offeredTools()
	for turn := 1; turn <= maxTurns; turn++ {
		messages = e.warn(messages, turn, maxTurns)
		req := model.Request{Messages: messages, Tools: tools}
		reply, err := e.complete(ctx, turn, req, &out)
		out.Turns = turn
		if errors.Is(err, model.ErrContextOverflow) && e.lenient() {
			messages, reply, err = e.retryShorter(ctx, messages, tools, turn, maxTurns, &out)
		}
		if e.failed(err, &out) {
			return out
		}
		out.Usage.Add(reply.Usage)
		if e.cut(reply, &out) || e.malformed(reply, &out) {
			return out
		}
		reply.Message.Role = model.RoleAssistant
		messages = append(messages, reply.Message)
		calls := reply.Message.ToolCalls
		if len(calls) > 0 {
			results, finished := e.runCalls(ctx, calls, timeout, &out)
			messages = append(messages, results...)
			out.Unsent = results
			if e.lost != nil {
				out.Status, out.Err = grader.StatusError, e.lost
				return out
			}
			if finished {
				e.settle(ctx, &out)
				return out
			}
			if err := ctx.Err(); err != nil {
				out.Status, out.Err = grader.StatusError, err
				return out
			}
		}
		messages = e.nudge(messages, calls, turn, maxTurns, false)
		if e.summariseAfter(reply.Usage, turn, maxTurns) {
			var sum model.Reply
			if messages, sum, err = e.summariseReply(ctx, messages, tools, turn, &out); e.failed(err, &out) ||
				e.cut(sum, &out) {
				return out
			}
		}
		messages = e.nudge(messages, calls, turn, maxTurns, true)
	}
	out.Status = grader.StatusMaxTurns
	return out
}

// retryShorter is the lenient loop's answer to an overflowing context: it summarises the newer
// half of the history (the whole no longer fits) and makes the turn's call once more.
func (e *Episode) retryShorter(
	ctx context.Context,
	messages []model.Message,
	tools []model.Tool,
	turn, maxTurns int,
	out *Outcome,
) ([]model.Message, model.Reply, error) {
	messages, err := e.summarise(ctx, recentHalf(messages), tools, turn, out)
	if err != nil {
		return messages, model.Reply{}, err
	}
	messages = e.warn(messages, turn, maxTurns)
	reply, err := e.complete(ctx, turn, model.Request{Messages: messages, Tools: tools}, out)
	return messages, reply, err
}

// nudge appends the continue message after a reply with no tool call. The lenient loop
// nudges at once (before any summary, which then drops it); the reference loop, as Stirrup,
// after the summary check and only when the next turn brings no warning.
func (e *Episode) nudge(
	messages []model.Message,
	calls []model.ToolCall,
	turn, maxTurns int,
	afterSummary bool,
) []model.Message {
	if len(calls) > 0 || afterSummary == e.lenient() || (!e.lenient() && maxTurns-turn <= warningTurns) {
		return messages
	}
	return append(messages, model.Message{Role: model.RoleUser, Content: e.texts.Continue()})
}

// offeredTools are the tools every call offers: the finish tool first in the reference loop,
// as Stirrup registers its finish tool before the session's tools; the shell tool first in the
// lenient loop.
func (e *Episode) offeredTools() []model.Tool {
	tools := e.texts.Tools(!e.lenient())
	if !e.lenient() {
		tools[0], tools[1] = tools[1], tools[0]
	}
	return tools
}

// warn appends the turn warning the turn gets, if any: in the last warningTurns turns, never
// before the first turn in the reference loop (Stirrup skips turn 0), from the first in the
// lenient one.
func (e *Episode) warn(messages []model.Message, turn, maxTurns int) []model.Message {
	left := maxTurns - turn + 1
	if left > warningTurns || (turn == 1 && !e.lenient()) {
		return messages
	}
	return append(messages, model.Message{Role: model.RoleUser, Content: e.texts.TurnsLeft(left)})
}

// complete makes one model call, timed and reported to OnTurn. The call sends every message
// so far, the last turn's results included.
func (e *Episode) complete(ctx context.Context, turn int, req model.Request, out *Outcome) (model.Reply, error) {
	out.Unsent = nil
	began := time.Now()
	reply, err := e.Model.Complete(ctx, req)
	out.ModelTime += time.Since(began)
	if e.OnTurn != nil {
		e.OnTurn(turn, req, reply, err)
	}
	return reply, err
}

// failed tells whether a call's error ends the episode, setting out's status: an error,
// except an overflowing context in the reference loop (where Stirrup's episode dies of it),
// which has a status of its own.
func (e *Episode) failed(err error, out *Outcome) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, model.ErrContextOverflow) && !e.lenient():
		out.Status, out.Reason = grader.StatusContextOverflow, err.Error()
	default:
		out.Status, out.Err = grader.StatusError, err
	}
	return true
}

// cut tells whether a reply stopped at the output cap ends the episode: in the reference
// loop it does, with a status of its own and before any of its calls runs, as Stirrup's
// clients raise on it.
func (e *Episode) cut(reply model.Reply, out *Outcome) bool {
	if !reply.Cut || e.lenient() {
		return false
	}
	out.Status, out.Reason = grader.StatusOutputLimit, fmt.Sprintf("a reply stopped at the output cap (%d tokens)",
		e.maxTokens())
	return true
}

// malformed tells whether a reply ends the episode for a tool call whose arguments are not
// JSON: in the reference loop it does, with a status of its own and before any call runs, as
// Stirrup's default logger parses every call's arguments when it prints the reply and raises
// (blank arguments it skips). The lenient loop refuses such a call and goes on.
func (e *Episode) malformed(reply model.Reply, out *Outcome) bool {
	if e.lenient() {
		return false
	}
	for _, c := range reply.Message.ToolCalls {
		if strings.TrimSpace(c.Arguments) != "" && !json.Valid([]byte(c.Arguments)) {
			out.Status, out.Reason = grader.StatusInvalidArguments, fmt.Sprintf("the %s call's arguments are not JSON: %s",
				c.Name, clip(c.Arguments, 200))
			return true
		}
	}
	return false
}

// maxTokens is the output cap the client sends.
func (e *Episode) maxTokens() int64 {
	if e.MaxTokens > 0 {
		return e.MaxTokens
	}
	return DefaultMaxTokens
}

// summariseAfter tells whether the history is summarised after this turn's reply. The
// reference loop does it when the reply's prompt and completion tokens reach 70% of max
// tokens, after any turn but the last (a finishing turn never gets here); the lenient loop
// against the context window, after any turn.
func (e *Episode) summariseAfter(u model.Usage, turn, maxTurns int) bool {
	used := float64(u.Input + u.Output)
	if e.lenient() {
		return e.ContextWindow > 0 && used >= summariseAt*float64(e.ContextWindow)
	}
	return turn != maxTurns && used >= summariseAt*float64(e.maxTokens())
}

// summarise is summariseReply for the lenient loop's overflow, where the summary reply's own
// ending does not matter.
func (e *Episode) summarise(
	ctx context.Context,
	messages []model.Message,
	tools []model.Tool,
	turn int,
	out *Outcome,
) ([]model.Message, error) {
	history, _, err := e.summariseReply(ctx, messages, tools, turn, out)
	return history, err
}

// summariseReply asks the model, with the tools still attached, for a structured summary of
// the investigation, and replaces the history with the system prompt, the task prompt, that
// summary and a short acknowledgement; it returns the summary's reply too, whose ending the
// caller judges. Earlier summaries go with the rest of the history. The call is not a turn.
// The acknowledgement is a user message, as in the reference harness: a history ending on an
// assistant message would make the next call a prefill, whose reply the model writes as a
// continuation of the harness's words and thinking models refuse.
func (e *Episode) summariseReply(
	ctx context.Context,
	messages []model.Message,
	tools []model.Tool,
	turn int,
	out *Outcome,
) ([]model.Message, model.Reply, error) {
	ask := model.Message{Role: model.RoleUser, Content: e.texts.SummaryRequest()}
	req := model.Request{Messages: append(append([]model.Message(nil), messages...), ask), Tools: tools, Summary: true}
	reply, err := e.complete(ctx, turn, req, out)
	if err != nil {
		return nil, reply, fmt.Errorf("summarise the history: %w", err)
	}
	out.Usage.Add(reply.Usage)
	out.Summaries++
	return []model.Message{
		messages[0], messages[1],
		{Role: model.RoleUser, Content: e.texts.SummaryBridge(reply.Message.Content)},
		{Role: model.RoleUser, Content: e.texts.SummaryAck()},
	}, reply, nil
}

// recentHalf keeps the system and task prompts and the newer half of the rest of the history,
// starting at an assistant message so that no tool result loses its call.
func recentHalf(messages []model.Message) []model.Message {
	if len(messages) <= 2 {
		return messages
	}
	start := 2 + (len(messages)-2)/2
	for start < len(messages) && messages[start].Role != model.RoleAssistant {
		start++
	}
	return append(append([]model.Message(nil), messages[:2]...), messages[start:]...)
}

// runCalls runs one turn's tool calls one after another and returns their results in call
// order, and whether a finish call was accepted. The reference loop runs them in the order
// emitted, finish included, and every call of the reply even after an accepted finish, as
// Stirrup does; the lenient loop runs the finish call last. Two finish calls are both refused
// in either.
func (e *Episode) runCalls(
	ctx context.Context,
	calls []model.ToolCall,
	timeout time.Duration,
	out *Outcome,
) ([]model.Message, bool) {
	finishName := e.texts.FinishTool()
	finishes := 0
	for _, c := range calls {
		if c.Name == finishName {
			finishes++
		}
	}
	results := make([]model.Message, len(calls))
	finished := false
	for _, i := range e.callOrder(calls) {
		c := calls[i]
		out.ToolCalls++
		result := model.Message{Role: model.RoleTool, ToolCallID: c.ID}
		began := time.Now()
		switch {
		case c.Name == finishName && finishes > 1:
			result.Content, result.IsError = e.texts.FinishTwoCalls(), true
		case c.Name == finishName:
			if refusal := e.finishCall(ctx, c.Arguments, out); refusal != "" {
				result.Content, result.IsError = refusal, true
			} else {
				finished = true
				result.Content = "Submitted " + grader.SubmissionFile + "." // the episode ends: the model never sees it
			}
		default:
			result.Content, result.IsError = e.runTool(ctx, c, timeout)
		}
		out.ToolTime += time.Since(began)
		results[i] = result
		if e.lost != nil {
			return nil, false // the sandbox is gone: nothing more runs
		}
	}
	return results, finished
}

// noteLost keeps err when it means the sandbox can no longer be used: its guest died, or a
// reply was not its guest's (sandbox.ErrGuestDied). The episode then ends as an error, which
// a resumed run plays again, instead of the model being told of every command it tries.
func (e *Episode) noteLost(err error) {
	if e.lost == nil && errors.Is(err, sandbox.ErrGuestDied) {
		e.lost = err
	}
}

// callOrder is the order a reply's calls run in: as emitted in the reference loop, the finish
// calls last in the lenient one.
func (e *Episode) callOrder(calls []model.ToolCall) []int {
	finishName := e.texts.FinishTool()
	order := make([]int, 0, len(calls))
	var finishes []int
	for i, c := range calls {
		if c.Name == finishName && e.lenient() {
			finishes = append(finishes, i)
		} else {
			order = append(order, i)
		}
	}
	return append(order, finishes...)
}

// runTool runs a call of a tool other than finish: the shell, or one that does not exist.
func (e *Episode) runTool(ctx context.Context, c model.ToolCall, timeout time.Duration) (string, bool) {
	if c.Name == e.texts.ShellTool() {
		return e.shell(ctx, c.Arguments, timeout)
	}
	return e.texts.UnknownTool(c.Name), true
}

// finishCall checks a finish call as the loop does; a refusal, the text to send back, is not
// empty. The lenient loop takes only a readable agent_output.json (into out); the reference
// loop takes any call whose listed paths are files of the workspace, as Stirrup takes any
// whose paths exist, and the submission is read once the turn's calls have all run.
func (e *Episode) finishCall(ctx context.Context, arguments string, out *Outcome) string {
	if !e.lenient() {
		return e.finishPaths(ctx, arguments)
	}
	doc, entities, refusal := e.finish(ctx, arguments)
	if refusal == "" {
		out.Submission, out.Entities = doc, entities
	}
	return refusal
}

// finishPaths is the reference loop's finish: reason and paths must both be there with their
// types (Stirrup validates the arguments against its schema, where both are required), and
// every path listed must be a file of the workspace; an empty list is taken whatever exists.
func (e *Episode) finishPaths(ctx context.Context, arguments string) string {
	var args struct {
		Reason *string   `json:"reason"`
		Paths  *[]string `json:"paths"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || args.Reason == nil || args.Paths == nil {
		return e.texts.FinishInvalidArguments()
	}
	for _, p := range *args.Paths {
		if refusal := e.pathRefusal(ctx, p); refusal != "" {
			return refusal
		}
	}
	return ""
}

// settle sets the status of an episode whose finish call was accepted. The lenient loop took
// the submission with the call. The reference loop reads agent_output.json now, after every
// call of the reply: a finish that handed back no answer file ends with no submission, one
// that cannot be read as a diagnosis is invalid (both score 0, as the reference's would).
func (e *Episode) settle(ctx context.Context, out *Outcome) {
	if e.lenient() {
		out.Status = grader.StatusOK
		return
	}
	doc, sub, err := grader.ReadSubmissionWith(func(limit int64) ([]byte, error) {
		return e.Sandbox.ReadFile(ctx, grader.SubmissionFile, limit)
	})
	switch {
	case errors.Is(err, sandbox.ErrGuestDied):
		out.Status, out.Err = grader.StatusError, err
	case err == nil:
		out.Status, out.Submission, out.Entities = grader.StatusOK, doc, sub.Names
	case errors.Is(err, fs.ErrNotExist):
		out.Status, out.Reason = grader.StatusNoSubmission,
			"the finish call was accepted with no "+grader.SubmissionFile+" written"
	default:
		out.Status, out.Reason = grader.StatusInvalid, grader.SubmissionFile+": "+err.Error()
	}
}

// shell runs a shell tool call.
func (e *Episode) shell(ctx context.Context, arguments string, timeout time.Duration) (string, bool) {
	cmd, ok := model.ShellCommand(arguments)
	if !ok {
		return e.texts.ShellInvalidArguments(clip(arguments, 200)), true
	}
	res, err := e.Sandbox.Run(ctx, cmd, timeout)
	if err != nil {
		e.noteLost(err)
		return e.texts.ShellError(err), true
	}
	return e.texts.ShellResult(promptset.CommandResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut,
		Stdout: res.Stdout, Stderr: res.Stderr, StdoutChars: res.StdoutChars, StderrChars: res.StderrChars}), false
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	for i := range s {
		if n == 0 {
			return s[:i]
		}
		n--
	}
	return s
}

// finish checks a finish call of the lenient loop: the paths it hands back must be files of the workspace, and
// agent_output.json must be there and readable as a diagnosis. The sandbox opens them as it
// sees them (see Sandbox.ReadFile): a link, a FIFO or a device the model made cannot reach
// or stall the host. A refusal, the text to send back, is not empty; the model may try again.
func (e *Episode) finish(ctx context.Context, arguments string) ([]byte, []string, string) {
	var args struct {
		Reason string   `json:"reason"`
		Paths  []string `json:"paths"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, nil, e.texts.FinishInvalidArguments()
	}
	doc, sub, err := grader.ReadSubmissionWith(func(limit int64) ([]byte, error) {
		return e.Sandbox.ReadFile(ctx, grader.SubmissionFile, limit)
	})
	if err != nil {
		e.noteLost(err)
		return nil, nil, e.outputRefusal(err)
	}
	for _, p := range args.Paths {
		if refusal := e.pathRefusal(ctx, p); refusal != "" {
			return nil, nil, refusal
		}
	}
	return doc, sub.Names, ""
}

// outputRefusal says why agent_output.json cannot be taken.
func (e *Episode) outputRefusal(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return e.texts.FinishNoOutput()
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return e.texts.FinishOutputOutside()
	case errors.Is(err, grader.ErrInvalidSubmission):
		return e.texts.FinishInvalidOutput(err)
	}
	return e.texts.FinishUnreadableOutput(err)
}

// pathRefusal says why a path the finish call hands back cannot be taken ("" when it can).
func (e *Episode) pathRefusal(ctx context.Context, p string) string {
	rel := p
	if filepath.IsAbs(p) {
		rel, _ = filepath.Rel(e.Sandbox.Workdir(), p)
	}
	rel = filepath.Clean(rel)
	err := sandbox.ErrOutsideWorkspace
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		err = e.Sandbox.CheckFile(ctx, rel)
		e.noteLost(err)
	}
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrNotExist):
		return e.texts.FinishPathMissing(p)
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return e.texts.FinishPathOutside(p)
	}
	return e.texts.FinishPathRefused(p, err)
}
