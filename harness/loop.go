// Package harness runs episodes: a model investigates a sandboxed snapshot through the shell
// tool, turn by turn, and submits a diagnosis, exactly as the reference harness does.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// SubmissionFile is the diagnosis the model writes in the working directory and hands back
// with the finish tool (grader.SubmissionFile).
const SubmissionFile = grader.SubmissionFile

// Loop limits of the reference harness.
const (
	DefaultMaxTurns = 100
	warningTurns    = 20   // remaining-turn warnings appear in the last 20 turns
	summariseAt     = 0.70 // share of the context window that triggers summarisation
)

// turnsLeftMessage is the warning before each of the last turns.
func (t episodeTexts) turnsLeftMessage(left int) string {
	if left == 1 {
		return t.text(keyLastTurn, nil)
	}
	return t.text(keyTurnsLeft, map[string]string{"turns_left": strconv.Itoa(left)})
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
	Model          model.Model
	Sandbox        sandbox.Sandbox
	MaxTurns       int
	CommandTimeout time.Duration
	// Prompts are every text the model sees (nil: the built-in set); Tools, what the sandbox
	// offers, which the task prompt states.
	Prompts *Prompts
	Tools   sandbox.Tools
	// ContextWindow, in tokens, sets when the history is summarised (at 70%); 0 never.
	ContextWindow int64
	// OnTurn, when set, hears about every model call (for progress and trajectories).
	OnTurn func(turn int, req model.Request, reply model.Reply, err error)

	texts episodeTexts // the prompt set with this episode's facts, set by Run
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
	e.texts = e.Prompts.forEpisode(promptEnv{workdir: e.Sandbox.Workdir(), tools: e.Tools, maxTurns: maxTurns, commandTimeout: timeout})
	messages := []model.Message{{Role: model.RoleSystem, Content: e.texts.text(keySystem, nil)}, {Role: model.RoleUser, Content: e.texts.text(keyTask, nil)}}
	tools := e.texts.tools()
	for turn := 1; turn <= maxTurns; turn++ {
		if left := maxTurns - turn + 1; left <= warningTurns {
			messages = append(messages, model.Message{Role: model.RoleUser, Content: e.texts.turnsLeftMessage(left)})
		}
		req := model.Request{Messages: messages, Tools: tools}
		began := time.Now()
		reply, err := e.Model.Complete(ctx, req)
		out.ModelTime += time.Since(began)
		out.Turns = turn
		if e.OnTurn != nil {
			e.OnTurn(turn, req, reply, err)
		}
		if errors.Is(err, model.ErrContextOverflow) {
			// Summarise the newer half of the history (the whole no longer fits) and try the
			// turn once more.
			if messages, err = e.summarise(ctx, recentHalf(messages), tools, turn, &out); err == nil {
				if left := maxTurns - turn + 1; left <= warningTurns {
					messages = append(messages, model.Message{Role: model.RoleUser, Content: e.texts.turnsLeftMessage(left)})
				}
				req = model.Request{Messages: messages, Tools: tools}
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
		reply.Message.Role = model.RoleAssistant
		messages = append(messages, reply.Message)
		if calls := reply.Message.ToolCalls; len(calls) == 0 {
			messages = append(messages, model.Message{Role: model.RoleUser, Content: e.texts.text(keyContinue, nil)})
		} else {
			messages = append(messages, e.runCalls(ctx, calls, timeout, &out)...)
			if out.Err != nil { // the sandbox is lost
				out.Status = StatusError
				return out
			}
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
func (e *Episode) summarise(ctx context.Context, messages []model.Message, tools []model.Tool, turn int, out *Outcome) ([]model.Message, error) {
	req := model.Request{Messages: append(append([]model.Message(nil), messages...), model.Message{Role: model.RoleUser, Content: e.texts.text(keySummaryRequest, nil)}), Tools: tools, Summary: true}
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
	return []model.Message{
		messages[0], messages[1],
		{Role: model.RoleUser, Content: e.texts.text(keySummaryBridge, map[string]string{"summary": reply.Message.Content})},
		{Role: model.RoleUser, Content: e.texts.text(keySummaryAck, nil)},
	}, nil
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

// runCalls runs one turn's tool calls one after another in the order given, the finish call
// last; two finish calls are both refused. It returns the tool results, in call order; a
// finish call that succeeds puts the submission in out. When the sandbox is lost (see
// sandboxLost) it stops there and puts the error in out.
func (e *Episode) runCalls(ctx context.Context, calls []model.ToolCall, timeout time.Duration, out *Outcome) []model.Message {
	shellName, finishName := e.texts.vars["shell_tool"], e.texts.vars["finish_tool"]
	var finishes []int
	for i, c := range calls {
		if c.Name == finishName {
			finishes = append(finishes, i)
		}
	}
	results := make([]model.Message, len(calls))
	order := make([]int, 0, len(calls))
	for i, c := range calls {
		if c.Name != finishName {
			order = append(order, i)
		}
	}
	order = append(order, finishes...)
	for _, i := range order {
		c := calls[i]
		out.ToolCalls++
		result := model.Message{Role: model.RoleTool, ToolCallID: c.ID}
		began := time.Now()
		var lost error
		switch {
		case c.Name == shellName:
			result.Content, result.IsError, lost = e.shell(ctx, c.Arguments, timeout)
		case c.Name == finishName && len(finishes) > 1:
			result.Content, result.IsError = e.texts.text(keyFinishTwoCalls, nil), true
		case c.Name == finishName:
			if doc, entities, refusal, err := e.finish(ctx, c.Arguments); err != nil {
				lost = err
			} else if refusal != "" {
				result.Content, result.IsError = refusal, true
			} else {
				out.Submission, out.Entities = doc, entities
				result.Content = "Submitted " + SubmissionFile + "." // the episode ends: the model never sees it
			}
		default:
			result.Content, result.IsError = e.texts.text(keyUnknownTool, map[string]string{"tool": c.Name}), true
		}
		out.ToolTime += time.Since(began)
		if lost != nil {
			out.Err = lost
			return nil
		}
		results[i] = result
	}
	return results
}

// sandboxLost is err when it means the sandbox can no longer be used: its agent died, or a
// reply was not its agent's (sandbox.ErrAgentDied). The episode then ends as an error, which
// a resumed run plays again, instead of the model being told of every command it tries.
func sandboxLost(err error) error {
	if errors.Is(err, sandbox.ErrAgentDied) {
		return err
	}
	return nil
}

// shell runs a shell tool call; the error is set only when the sandbox is lost.
func (e *Episode) shell(ctx context.Context, arguments string, timeout time.Duration) (string, bool, error) {
	var args struct {
		Cmd *string `json:"cmd"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil || args.Cmd == nil {
		return e.texts.text(keyShellInvalidArguments, map[string]string{"arguments": clip(arguments, 200)}), true, nil
	}
	res, err := e.Sandbox.Run(ctx, *args.Cmd, timeout)
	if err != nil {
		return e.texts.text(keyShellError, map[string]string{"error": err.Error()}), true, sandboxLost(err)
	}
	return e.texts.shellResults(res), false, nil
}

// clip keeps the first n characters of s.
func clip(s string, n int) string {
	if at := runeOffset(s, n); at >= 0 {
		return s[:at]
	}
	return s
}

// finish checks a finish call: the paths it hands back must be files of the workspace, and
// agent_output.json must be there and readable as a diagnosis. The sandbox opens them as it
// sees them (see Sandbox.ReadFile): a link, a FIFO or a device the model made cannot reach
// or stall the host. A refusal, the text to send back, is not empty; the model may try again.
// The error is set only when the sandbox is lost.
func (e *Episode) finish(ctx context.Context, arguments string) ([]byte, []string, string, error) {
	var args struct {
		Reason string   `json:"reason"`
		Paths  []string `json:"paths"`
	}
	if err := json.Unmarshal([]byte(arguments), &args); err != nil {
		return nil, nil, e.texts.text(keyFinishInvalidArguments, nil), nil
	}
	doc, sub, err := grader.ReadSubmissionWith(func(limit int64) ([]byte, error) {
		return e.Sandbox.ReadFile(ctx, SubmissionFile, limit)
	})
	if err != nil {
		return nil, nil, e.outputRefusal(err), sandboxLost(err)
	}
	for _, p := range args.Paths {
		if refusal, err := e.pathRefusal(ctx, p); refusal != "" {
			return nil, nil, refusal, err
		}
	}
	return doc, sub.Names, "", nil
}

// outputRefusal says why agent_output.json cannot be taken.
func (e *Episode) outputRefusal(err error) string {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return e.texts.text(keyFinishNoOutput, nil)
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return e.texts.text(keyFinishOutputOutside, nil)
	case errors.Is(err, grader.ErrInvalidSubmission):
		return e.texts.text(keyFinishInvalidOutput, map[string]string{"error": err.Error()})
	}
	return e.texts.text(keyFinishUnreadableOutput, map[string]string{"error": err.Error()})
}

// pathRefusal says why a path the finish call hands back cannot be taken ("" when it can),
// with the error that lost the sandbox if it did.
func (e *Episode) pathRefusal(ctx context.Context, p string) (string, error) {
	rel := p
	if filepath.IsAbs(p) {
		rel, _ = filepath.Rel(e.Sandbox.Workdir(), p)
	}
	rel = filepath.Clean(rel)
	err := sandbox.ErrOutsideWorkspace
	if rel != ".." && !strings.HasPrefix(rel, "../") {
		err = e.Sandbox.CheckFile(ctx, rel)
	}
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, fs.ErrNotExist):
		return e.texts.text(keyFinishPathMissing, map[string]string{"path": p}), nil
	case errors.Is(err, sandbox.ErrOutsideWorkspace):
		return e.texts.text(keyFinishPathOutside, map[string]string{"path": p}), nil
	}
	return e.texts.text(keyFinishPathRefused, map[string]string{"path": p, "error": err.Error()}), sandboxLost(err)
}
