package export

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/version"
)

// ATIF is the ATIF document of the episode e of run: the prompts as system and user steps, each
// model call as an agent step (its message, reasoning, tool calls with the results that
// answered them, its tokens and cost), the harness's messages as user steps and the submission
// as a last system step; what ATIF has no field for goes into the extras. The document is
// checked (atif.Check) before it is returned, so an export never writes an invalid one.
func ATIF(run *runfolder.Run, e runfolder.Episode) (*atif.Trajectory, error) {
	ep, err := readEpisode(run, e)
	if err != nil {
		return nil, err
	}
	if len(ep.calls) == 0 {
		return nil, fmt.Errorf("%s: %w (no model call was recorded)", runfolder.EpisodeDir(run.Dir, e), ErrNoTrajectory)
	}
	b := &atifBuilder{header: run.Header, open: map[string]*pendingCalls{}}
	for _, c := range ep.calls {
		b.call(c)
	}
	if ep.submission != nil {
		content := atif.Text(ep.submission)
		b.add(atif.Step{Source: atif.SourceSystem, Message: grader.SubmissionFile, Observation: &atif.Observation{
			Results: []atif.ObservationResult{{Content: &content, Extra: atif.Extra{atif.ExtraPath: grader.SubmissionFile}}}}})
	}
	id := fmt.Sprintf("%s/%s/%d", run.Header.Started.UTC().Format(time.RFC3339), e.Task, e.Repeat)
	t := &atif.Trajectory{
		SchemaVersion: atif.Version,
		SessionID:     id,
		TrajectoryID:  id,
		Agent:         b.agent(ep.tools),
		Steps:         b.steps,
		Notes: "Exported by aa-grade " + version.Version + " from the run folder's trajectory: the messages and usage " +
			"the model calls recorded; the raw HTTP bodies stay in the run folder.",
		FinalMetrics: b.finalMetrics(ep.result),
		Extra:        episodeExtra(run.Header, e, ep.result),
	}
	if err := atif.Check(t); err != nil {
		return nil, fmt.Errorf("%s repeat %d: the ATIF document is not valid: %w", e.Task, e.Repeat, err)
	}
	return t, nil
}

// pendingCalls are the calls of one step that share an id the model gave, in order, with the
// ids the document gives them; the results that answer them take them in that order.
type pendingCalls struct {
	step int
	ids  []string
}

// atifBuilder builds the steps call by call.
type atifBuilder struct {
	header runfolder.Header
	steps  []atif.Step
	// open maps a tool call's id, as the model gave it, to the latest step's calls with it.
	open  map[string]*pendingCalls
	usage model.Usage
	cost  *float64 // nil while the prices are unknown
	calls int
	// unreported counts the calls that reported no usage.
	unreported int
}

func (b *atifBuilder) add(s atif.Step) {
	s.StepID = len(b.steps) + 1
	b.steps = append(b.steps, s)
}

// call adds a model call: the messages new to it, then its reply.
func (b *atifBuilder) call(c call) {
	for _, m := range c.Input {
		b.message(m)
	}
	one := 1
	step := atif.Step{Source: atif.SourceAgent, Timestamp: c.At.UTC().Format("2006-01-02T15:04:05.000000Z07:00"),
		ReasoningEffort: b.header.ReasoningEffort, Message: atif.Text(c.Reply.Content), LLMCallCount: &one,
		Extra: atif.Extra{"turn": c.Turn}}
	if c.Summary {
		step.Extra["summary"] = true
	}
	if c.Cut {
		step.Extra["cut"] = true
	}
	if c.Error != "" {
		step.Extra["error"] = c.Error
	}
	reasoning, hidden := model.Reasoning(c.Reply.Opaque)
	step.ReasoningContent = reasoning
	if hidden {
		step.Extra["reasoning_hidden"] = true
	}
	step.ToolCalls = b.toolCalls(c.Reply.ToolCalls, len(b.steps), c.Turn)
	b.calls++
	switch {
	case c.unreported:
		b.unreported++
		step.Extra["usage"] = "not reported"
	case c.Error == "":
		step.Metrics = b.metrics(c.Usage)
	}
	b.add(step)
}

// message adds a message sent to the model: a prompt, a harness message, a tool result (into
// the observation of the step whose call it answers), or a reply sent again after the history
// was shortened.
func (b *atifBuilder) message(m model.Message) {
	switch m.Role {
	case model.RoleSystem:
		b.add(atif.Step{Source: atif.SourceSystem, Message: atif.Text(m.Content)})
	case model.RoleUser:
		b.add(atif.Step{Source: atif.SourceUser, Message: atif.Text(m.Content)})
	case model.RoleAssistant:
		reasoning, _ := model.Reasoning(m.Opaque)
		b.add(atif.Step{Source: atif.SourceAgent, Message: atif.Text(m.Content), ReasoningContent: reasoning,
			ToolCalls: b.toolCalls(m.ToolCalls, len(b.steps), 0), IsCopiedContext: true})
	case model.RoleTool:
		b.toolResult(m)
	}
}

// toolCalls are a reply's calls, each with an id unique in its step: the model's, else (none,
// or one given twice) one made of the turn and the call's place, the model's kept in extra.
// Arguments that are not a JSON object (a model's broken JSON) are {} with the text in extra.
func (b *atifBuilder) toolCalls(calls []model.ToolCall, step, turn int) []atif.ToolCall {
	var out []atif.ToolCall
	used := map[string]bool{}
	for i, c := range calls {
		tc := atif.ToolCall{ToolCallID: c.ID, FunctionName: c.Name, Arguments: json.RawMessage(c.Arguments)}
		if c.ID == "" || used[c.ID] {
			tc.ToolCallID = fmt.Sprintf("aa-grade-%d-%d-%d", step+1, turn, i+1)
			tc.Extra = atif.Extra{"id": c.ID}
		}
		used[tc.ToolCallID] = true
		if !isObject(c.Arguments) {
			tc.Arguments = json.RawMessage("{}")
			if tc.Extra == nil {
				tc.Extra = atif.Extra{}
			}
			tc.Extra["arguments"] = c.Arguments
		}
		if p := b.open[c.ID]; p != nil && p.step == step {
			p.ids = append(p.ids, tc.ToolCallID)
		} else {
			b.open[c.ID] = &pendingCalls{step: step, ids: []string{tc.ToolCallID}}
		}
		out = append(out, tc)
	}
	return out
}

// isObject says whether s is a JSON object.
func isObject(s string) bool {
	var v map[string]json.RawMessage
	return json.Unmarshal([]byte(s), &v) == nil && bytes.HasPrefix(bytes.TrimSpace([]byte(s)), []byte("{"))
}

// toolResult puts a tool result into the observation of the step whose call it answers; one
// that answers no call the document holds is a system step's observation, naming the id.
func (b *atifBuilder) toolResult(m model.Message) {
	content := atif.Text(m.Content)
	r := atif.ObservationResult{Content: &content}
	if m.IsError {
		r.Extra = atif.Extra{"is_error": true}
	}
	p := b.open[m.ToolCallID]
	if p == nil || len(p.ids) == 0 {
		if r.Extra == nil {
			r.Extra = atif.Extra{}
		}
		r.Extra["tool_call_id"] = m.ToolCallID
		b.add(atif.Step{Source: atif.SourceSystem, Observation: &atif.Observation{Results: []atif.ObservationResult{r}}})
		return
	}
	r.SourceCallID, p.ids = p.ids[0], p.ids[1:]
	s := &b.steps[p.step]
	if s.Observation == nil {
		s.Observation = &atif.Observation{}
	}
	s.Observation.Results = append(s.Observation.Results, r)
}

// metrics are a call's tokens and cost, and the totals grow by them.
func (b *atifBuilder) metrics(u model.Usage) *atif.Metrics {
	b.usage.Add(u)
	m := &atif.Metrics{PromptTokens: &u.Input, CompletionTokens: &u.Output, CachedTokens: &u.CachedRead,
		CostUSD: b.header.Prices.Cost(
			u), Extra: atif.Extra{"cache_write_tokens": u.CachedWrite, "reasoning_tokens": u.Reasoning}}
	if m.CostUSD != nil {
		b.cost = addCost(b.cost, *m.CostUSD)
	}
	return m
}

func addCost(total *float64, c float64) *float64 {
	sum := c
	if total != nil {
		sum += *total
	}
	return &sum
}

// agent is the document's agent: aa-grade's loop at the version that ran, the model, the tools.
func (b *atifBuilder) agent(tools []json.RawMessage) atif.Agent {
	h := b.header
	v := h.Version
	if v == "" {
		v = "unknown"
	}
	extra := atif.Extra{"loop": h.LoopName(), "max_turns": h.MaxTurns, "command_timeout": h.CommandTimeout,
		"sandbox": h.Sandbox, "prompt_sha256": h.PromptSHA256}
	for k, val := range map[string]string{"revision": h.Revision, "base_url": h.BaseURL,
		"reasoning_effort": h.ReasoningEffort, "image": h.Image, "image_digest": h.ImageDigest} {
		if val != "" {
			extra[k] = val
		}
	}
	if h.MaxTokens > 0 {
		extra["max_tokens"] = h.MaxTokens
	}
	if h.Prices != nil {
		extra["prices_usd_per_million_tokens"] = h.Prices
	}
	return atif.Agent{Name: atif.ExportAgent, Version: v, ModelName: h.Model, ToolDefinitions: tools, Extra: extra}
}

// finalMetrics are the episode's totals: the tokens of the calls that reported them, and the
// cost the run recorded for the episode (else the sum of the calls' costs).
func (b *atifBuilder) finalMetrics(r *runfolder.Result) *atif.FinalMetrics {
	u := b.usage
	steps := len(b.steps)
	m := &atif.FinalMetrics{
		TotalPromptTokens:     &u.Input,
		TotalCompletionTokens: &u.Output,
		TotalCachedTokens:     &u.CachedRead,
		TotalCostUSD:          b.cost,
		TotalSteps:            &steps,
		Extra: atif.Extra{"total_cache_write_tokens": u.CachedWrite, "total_reasoning_tokens": u.Reasoning,
			"model_calls": b.calls},
	}
	if b.unreported > 0 {
		m.Extra["calls_without_usage"] = b.unreported
	}
	if r != nil {
		m.TotalCostUSD = r.CostUSD
		m.Extra["turns"], m.Extra["tool_calls"], m.Extra["retries"] = r.Turns, r.ToolCalls, r.Retries
		m.Extra["duration_s"], m.Extra["model_s"], m.Extra["tool_s"] = r.Duration, r.ModelTime, r.ToolTime
	}
	return m
}

// episodeExtra is what the run says of the episode: the task, the dataset, and its grade.
func episodeExtra(h runfolder.Header, e runfolder.Episode, r *runfolder.Result) atif.Extra {
	x := atif.Extra{"task": e.Task, "repeat": e.Repeat, "dataset": h.Dataset}
	if h.DatasetCommit != "" {
		x["dataset_commit"] = h.DatasetCommit
	}
	if r == nil {
		x["status"] = "unfinished"
		return x
	}
	x["status"], x["score"], x["tp"], x["fp"] = r.Status, r.Score, r.TP, r.FP
	x["root_causes"], x["root_causes_found"] = r.RootCauses, r.RootCausesFound
	if r.Error != "" {
		x["error"] = r.Error
	}
	if r.Matcher != "" {
		x["matcher"] = r.Matcher
	}
	return x
}
