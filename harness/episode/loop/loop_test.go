package loop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/guesttest"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// The test binary doubles as the sandbox guest, as aa-grade does.
func TestMain(m *testing.M) { guesttest.Main(m) }

// script is a model that plays back replies and records every request it got.
type script struct {
	replies  []model.Message
	requests []model.Request
}

func (s *script) Complete(_ context.Context, req model.Request) (model.Reply, error) {
	s.requests = append(s.requests, req)
	if len(s.replies) == 0 {
		return model.Reply{Message: model.Message{Content: "thinking..."}}, nil
	}
	next := s.replies[0]
	s.replies = s.replies[1:]
	return model.Reply{Message: next, Usage: model.Usage{Input: 100, Output: 10}}, nil
}

func call(id, name, args string) model.ToolCall {
	return model.ToolCall{ID: id, Name: name, Arguments: args}
}

func shell(id, cmd string) model.ToolCall {
	b, _ := json.Marshal(map[string]string{"cmd": cmd})
	return call(id, shellName, string(b))
}

// The tool names of the built-in prompt set.
const shellName, finishName = "code_exec", "finish"

const finishArgs = `{"reason": "done", "paths": ["agent_output.json"]}`
const diagnosis = `{"contributing_factors":[{"name":"otel-demo/ConfigMap/flagd-config","reasoning":"r","evidence":"e"}]}`

// newEpisode starts a real sandbox (the strongest here) over a tiny snapshot.
func newEpisode(t *testing.T, model model.Model, maxTurns int) *Episode {
	t.Helper()
	return newEpisodeIn(t, guesttest.Backend(t), model, maxTurns)
}

// newEpisodeIn starts a sandbox of the backend over a tiny snapshot.
func newEpisodeIn(t *testing.T, backend sandbox.Backend, model model.Model, maxTurns int) *Episode {
	t.Helper()
	dir := t.TempDir()
	snap, scratch := filepath.Join(dir, "snap"), filepath.Join(dir, "scratch")
	testfs.Write(t, filepath.Join(snap, "k8s_events_raw.tsv"), "Timestamp\tBody\n")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		t.Fatal(err)
	}
	exe, _ := os.Executable()
	sb, err := backend.Start(context.Background(), sandbox.Spec{Snapshot: snap, Scratch: scratch, Guest: exe, GuestArg: []string{sandbox.GuestCommand}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sb.Close() })
	return &Episode{Model: model, Sandbox: sb, Settings: settings.Settings{MaxTurns: maxTurns, Prompts: testPrompts(t)}}
}

// lenientEpisode is newEpisode following the lenient loop, whose departures from the
// reference the tests that use it pin down.
func lenientEpisode(t *testing.T, model model.Model, maxTurns int) *Episode {
	t.Helper()
	e := newEpisode(t, model, maxTurns)
	e.Loop = settings.LoopLenient
	return e
}

// testPrompts is the built-in set with a system prompt "system" and a task prompt "task".
func testPrompts(t *testing.T) *promptset.Set {
	return builtinWith(t, func(key string) (string, bool) {
		text, ok := map[string]string{"system": "system", "task": "task"}[key]
		return text, ok
	})
}

// sectionHeader starts a key's text in a prompt file.
var sectionHeader = regexp.MustCompile(`^--- ([a-z_]+) ---$`)

// builtinWith is the built-in set with the texts replace gives (ok false: the key's own text).
func builtinWith(t *testing.T, replace func(key string) (text string, ok bool)) *promptset.Set {
	t.Helper()
	var b strings.Builder
	keep := true
	for line := range strings.Lines(string(promptset.Builtin().Format())) {
		if m := sectionHeader.FindStringSubmatch(strings.TrimSuffix(line, "\n")); m != nil {
			b.WriteString(line)
			text, ok := replace(m[1])
			if keep = !ok; ok {
				b.WriteString(text + "\n")
			}
			continue
		}
		if keep {
			b.WriteString(line)
		}
	}
	p, err := promptset.Parse([]byte(b.String()))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// wantOutcome checks an episode's status and turns, each its own failure, and stops the test,
// showing the outcome, when either is wrong.
func wantOutcome(t *testing.T, out Outcome, status string, turns int) {
	t.Helper()
	if out.Status != status {
		t.Errorf("status %s, want %s", out.Status, status)
	}
	if out.Turns != turns {
		t.Errorf("%d turns, want %d", out.Turns, turns)
	}
	if t.Failed() {
		t.Fatalf("outcome = %+v", out)
	}
}

func toolResults(req model.Request) []model.Message {
	var out []model.Message
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			out = append(out, m)
		}
	}
	return out
}

func TestSeveralCallsRunInOrderWithFinishLast(t *testing.T) {
	m := &script{replies: []model.Message{{ToolCalls: []model.ToolCall{
		call("f", finishName, finishArgs),
		shell("a", "echo '"+diagnosis+"' > agent_output.json"),
		shell("b", "cat agent_output.json | wc -c"),
	}}}}
	out := lenientEpisode(t, m, 10).Run(context.Background())
	wantOutcome(t, out, grader.StatusOK, 1)
	if out.ToolCalls != 3 {
		t.Errorf("%d tool calls, want 3", out.ToolCalls)
	}
	textcheck.Has(t, "the submission", string(out.Submission), "flagd-config")
	if len(out.Entities) == 0 || !strings.Contains(out.Entities[0], "flagd-config") {
		t.Errorf("entities %q, want flagd-config's first", out.Entities)
	}
	if t.Failed() {
		t.Fatalf("outcome = %+v", out)
	}
	if len(m.requests) != 1 {
		t.Fatalf("%d requests, want 1: %+v", len(m.requests), m.requests)
	}
	if tools := m.requests[0].Tools; len(tools) != 2 || tools[0].Name != "code_exec" {
		t.Fatalf("the request's tools are %+v, want two, code_exec first", tools)
	}
	if out.Usage.Input != 100 || out.Usage.Output != 10 {
		t.Fatalf("usage = %+v", out.Usage)
	}
}

func TestTwoFinishCallsAreRefused(t *testing.T) {
	m := &script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{shell("a", "echo '"+diagnosis+"' > agent_output.json"), call("f1", finishName, finishArgs), call("f2", finishName, finishArgs)}},
		{ToolCalls: []model.ToolCall{call("f3", finishName, finishArgs)}},
	}}
	out := newEpisode(t, m, 10).Run(context.Background())
	if out.Status != grader.StatusOK || out.Turns != 2 {
		t.Fatalf("outcome = %+v", out)
	}
	results := toolResults(m.requests[1])
	wantRefused(t, "turn 1", results, false, true, true)
	textcheck.Has(t, "the shell call's result", results[0].Content, "<exit_code>0</exit_code>")
	if !textcheck.Has(t, "the second finish's result", results[1].Content, "only once") || t.Failed() {
		t.FailNow()
	}
}

func TestTextOnlyTurnCostsATurnAndGetsAContinue(t *testing.T) {
	m := &script{replies: []model.Message{
		{Content: "The root cause is flagd-config."},
		{ToolCalls: []model.ToolCall{shell("a", "echo '"+diagnosis+"' > agent_output.json")}},
		{ToolCalls: []model.ToolCall{call("f", finishName, finishArgs)}},
	}}
	e := newEpisode(t, m, 30)
	out := e.Run(context.Background()) // no turn warnings yet
	if out.Status != grader.StatusOK || out.Turns != 3 {
		t.Fatalf("outcome = %+v", out)
	}
	last := m.requests[1].Messages[len(m.requests[1].Messages)-1]
	if last.Role != model.RoleUser {
		t.Errorf("after a text-only turn the model got a message of role %s, want user", last.Role)
	}
	if last.Content != e.texts.Continue() {
		t.Errorf("after a text-only turn the model got %q, want the continue text %q", last.Content, e.texts.Continue())
	}
	textcheck.Has(t, "the message after a text-only turn", last.Content, "call the finish tool")
}

func TestWarningsInTheLastTurnsAndTheCap(t *testing.T) {
	m := &script{} // never calls a tool
	e := newEpisode(t, m, 25)
	out := e.Run(context.Background())
	wantOutcome(t, out, grader.StatusMaxTurns, 25)
	if out.Submission != nil {
		t.Errorf("a submission %q, want none", out.Submission)
	}
	if len(m.requests) != 25 {
		t.Fatalf("%d requests, want 25", len(m.requests))
	}
	for turn, req := range m.requests {
		left := 25 - turn
		var warning string
		for _, msg := range req.Messages[len(req.Messages)-1:] {
			if msg.Role == model.RoleUser && strings.Contains(msg.Content, "turn") && msg.Content != e.texts.Continue() {
				warning = msg.Content
			}
		}
		switch {
		case left > 20 && warning != "":
			t.Errorf("turn %d (%d left) warned: %q", turn+1, left, warning)
		case left <= 20 && warning != e.texts.TurnsLeft(left):
			t.Errorf("turn %d (%d left): last message %q", turn+1, left, warning)
		}
	}
	textcheck.Has(t, "the warning of the last turn", e.texts.TurnsLeft(1), "last turn")
	textcheck.Has(t, "the warning 20 turns before the cap", e.texts.TurnsLeft(20), "20 turns left")
}

func TestBadCallsBecomeToolErrors(t *testing.T) {
	m := &script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{
			call("a", shellName, `{"command": "ls"}`),
			call("b", shellName, `{not json`),
			call("c", "web_search", `{"q": "x"}`),
			call("d", finishName, finishArgs), // no agent_output.json yet
		}},
		{ToolCalls: []model.ToolCall{shell("e", "echo 'no diagnosis here' > agent_output.json"), call("f", finishName, finishArgs)}},
		{ToolCalls: []model.ToolCall{shell("h", "echo '"+diagnosis+"' > agent_output.json"), call("g", finishName, `{"reason": "done", "paths": ["missing.txt"]}`)}},
		{ToolCalls: []model.ToolCall{call("i", finishName, finishArgs)}},
	}}
	out := lenientEpisode(t, m, 10).Run(context.Background())
	if out.Status != grader.StatusOK || out.Turns != 4 {
		t.Fatalf("outcome = %+v", out)
	}
	first := toolResults(m.requests[1])
	for i, want := range []string{"Invalid arguments for code_exec", "Invalid arguments for code_exec", `Unknown tool "web_search"`, "is not in the working directory"} {
		if !first[i].IsError || !strings.Contains(first[i].Content, want) {
			t.Errorf("result %d = %+v, want an error saying %q", i, first[i], want)
		}
	}
	second := toolResults(m.requests[2])
	if r := second[len(second)-1]; !r.IsError || !strings.Contains(r.Content, "cannot be read as a diagnosis") {
		t.Errorf("unreadable submission: %+v", r)
	}
	third := toolResults(m.requests[3])
	if r := third[len(third)-1]; !r.IsError || !strings.Contains(r.Content, "Cannot hand back missing.txt: no such file") {
		t.Errorf("missing path: %+v", r)
	}
}

type failing struct{}

func (failing) Complete(context.Context, model.Request) (model.Reply, error) {
	return model.Reply{}, errors.New("401 invalid x-api-key")
}

func TestModelErrorEndsTheEpisode(t *testing.T) {
	out := newEpisode(t, failing{}, 10).Run(context.Background())
	wantOutcome(t, out, grader.StatusError, 1)
	if out.Err == nil || !strings.Contains(out.Err.Error(), "401") {
		t.Fatalf("error %v, want the provider's 401", out.Err)
	}
}

// sized is a script whose replies report a given usage, and which answers summary requests.
type sized struct {
	script
	usage []int64 // input+output of each turn's reply
}

func (s *sized) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	if req.Summary {
		s.requests = append(s.requests, req)
		return model.Reply{Message: model.Message{Content: "Goal: find the root cause. Key facts: flagd-config changed."}, Usage: model.Usage{Input: 10}}, nil
	}
	r, err := s.script.Complete(ctx, req)
	turn := 0
	for _, q := range s.requests {
		if !q.Summary {
			turn++
		}
	}
	if turn-1 < len(s.usage) {
		r.Usage = model.Usage{Input: s.usage[turn-1]}
	}
	return r, err
}

func TestSummarisationAtSeventyPercent(t *testing.T) {
	m := &sized{
		script: script{replies: []model.Message{
			{ToolCalls: []model.ToolCall{shell("a", "echo one")}},
			{ToolCalls: []model.ToolCall{shell("b", "echo two")}},
			{ToolCalls: []model.ToolCall{shell("c", "echo '"+diagnosis+"' > agent_output.json")}},
			{ToolCalls: []model.ToolCall{call("d", finishName, finishArgs)}},
		}},
		usage: []int64{600, 700, 100, 100}, // 70% of 1000 is reached by the second turn only
	}
	e := lenientEpisode(t, m, 50)
	e.ContextWindow = 1000
	out := e.Run(context.Background())
	wantOutcome(t, out, grader.StatusOK, 4)
	if out.Summaries != 1 {
		t.Fatalf("%d summaries, want 1", out.Summaries)
	}
	// Requests: turn 1, turn 2, the summary, turn 3, turn 4.
	if len(m.requests) != 5 {
		t.Fatalf("%d requests, want 5", len(m.requests))
	}
	for i, req := range m.requests {
		if req.Summary != (i == 2) {
			t.Errorf("request %d: summary %v, want %v", i+1, req.Summary, i == 2)
		}
	}
	if n := len(m.requests[2].Tools); n != 2 {
		t.Errorf("the summary request has %d tools, want 2", n)
	}
	if t.Failed() {
		t.FailNow()
	}
	summaryAsk := m.requests[2].Messages[len(m.requests[2].Messages)-1]
	if summaryAsk.Role != model.RoleUser {
		t.Errorf("summary request ends with a message of role %s, want user", summaryAsk.Role)
	}
	if !textcheck.Has(t, "the summary request's last message", summaryAsk.Content, "Next steps") || t.Failed() {
		t.FailNow()
	}
	after := m.requests[3].Messages
	if len(after) != 4 {
		t.Fatalf("history after the summary of %d messages, want 4: %+v", len(after), after)
	}
	if got, want := [2]string{after[0].Content, after[1].Content}, [2]string{"system", "task"}; got != want {
		t.Errorf("history after the summary begins %q, want %q", got, want)
	}
	textcheck.Has(t, "the summary in the history", after[2].Content, "flagd-config changed")
	if after[3].Role != model.RoleUser {
		t.Errorf("history after the summary ends with a message of role %s, want user", after[3].Role)
	}
	if t.Failed() {
		t.Fatalf("history after the summary = %+v", after)
	}
}

// TestEveryRequestEndsWithUserOrToolResult: after a summary with turns to spare, as after
// a context overflow, the next request ends with a user message, never with an assistant
// message of the harness's own (a prefill, which the model would continue and thinking
// models refuse).
func TestEveryRequestEndsWithUserOrToolResult(t *testing.T) {
	summarised := &sized{script: script{replies: []model.Message{{ToolCalls: []model.ToolCall{shell("a", "echo one")}}}}, usage: []int64{900}}
	e := lenientEpisode(t, summarised, 50)
	e.ContextWindow = 1000
	overflowed := &overflowing{script: script{replies: []model.Message{{Content: "one"}, {Content: "two"}}}}
	for _, run := range []struct {
		name     string
		episode  *Episode
		requests *[]model.Request
	}{
		{"summarised at 70%", e, &summarised.requests},
		{"context overflow", lenientEpisode(t, overflowed, 50), &overflowed.requests},
	} {
		run.episode.MaxTurns = 5 + warningTurns // the turns right after the summary have no warning
		if out := run.episode.Run(context.Background()); out.Summaries == 0 {
			t.Fatalf("%s: no summary in %+v", run.name, out)
		}
		for i, req := range *run.requests {
			if last := req.Messages[len(req.Messages)-1]; last.Role != model.RoleUser && last.Role != model.RoleTool {
				t.Errorf("%s: request %d ends with role %s: %q", run.name, i+1, last.Role, last.Content)
			}
		}
	}
}

// overflowing fails its third call with a context overflow, then behaves.
type overflowing struct {
	script
	calls int
}

func (o *overflowing) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	o.calls++
	if req.Summary {
		o.requests = append(o.requests, req)
		return model.Reply{Message: model.Message{Content: "summary: wrote nothing yet"}}, nil
	}
	if o.calls == 3 {
		o.requests = append(o.requests, req)
		return model.Reply{}, fmt.Errorf("HTTP 400: %w", model.ErrContextOverflow)
	}
	return o.script.Complete(ctx, req)
}

func TestContextOverflowSummarisesAndRetries(t *testing.T) {
	m := &overflowing{script: script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{shell("a", "echo one")}},
		{ToolCalls: []model.ToolCall{shell("b", "echo two")}},
		{ToolCalls: []model.ToolCall{shell("c", "echo '"+diagnosis+"' > agent_output.json"), call("d", finishName, finishArgs)}},
	}}}
	out := lenientEpisode(t, m, 50).Run(context.Background())
	wantOutcome(t, out, grader.StatusOK, 3)
	if out.Summaries != 1 {
		t.Fatalf("%d summaries, want 1", out.Summaries)
	}
	summaryReq := m.requests[3]
	if !summaryReq.Summary {
		t.Errorf("request 4 is no summary request")
	}
	if got := summaryReq.Messages[0].Content; got != "system" {
		t.Errorf("summary request: message 1 %q, want the system prompt", got)
	}
	if got := summaryReq.Messages[1].Content; got != "task" {
		t.Errorf("summary request: message 2 %q, want the task", got)
	}
	if got := summaryReq.Messages[2].Role; got != model.RoleAssistant {
		t.Errorf("summary request: message 3 of role %s, want assistant", got)
	}
	if t.Failed() {
		t.Fatalf("summary request = %+v", summaryReq.Messages)
	}
	retry := m.requests[4].Messages
	if len(retry) != 4 || !strings.Contains(retry[2].Content, "wrote nothing yet") {
		t.Fatalf("retried turn got %+v", retry)
	}
}

// TestFinishNeverFollowsTheModelOutOfTheWorkspace: a submission that is a link to a host file
// (here one holding a valid diagnosis), a FIFO (which would block a reader for good), and
// paths handed back that lead out through links or .. are all refused, on every backend; a
// real file after them is accepted.
func TestFinishNeverFollowsTheModelOutOfTheWorkspace(t *testing.T) {
	hostFile := filepath.Join(t.TempDir(), "host-answer.json")
	testfs.Write(t, hostFile, diagnosis)
	for _, backend := range guesttest.Backends(t) {
		t.Run(backend.Name(), func(t *testing.T) {
			m := &script{replies: []model.Message{
				{ToolCalls: []model.ToolCall{shell("a", "ln -s "+hostFile+" agent_output.json"), call("f1", finishName, finishArgs)}},
				{ToolCalls: []model.ToolCall{shell("b", "rm agent_output.json && mkfifo agent_output.json"), call("f2", finishName, finishArgs)}},
				{ToolCalls: []model.ToolCall{shell("c", "rm agent_output.json && echo '"+diagnosis+"' > agent_output.json && ln -s "+hostFile+" host-link && ln -s ../../../../../../etc/passwd up-link && mkfifo pipe"),
					call("f3", finishName, `{"reason": "done", "paths": ["agent_output.json", "host-link"]}`)}},
				{ToolCalls: []model.ToolCall{call("f4", finishName, `{"reason": "done", "paths": ["up-link"]}`)}},
				{ToolCalls: []model.ToolCall{call("f5", finishName, `{"reason": "done", "paths": ["pipe"]}`)}},
				{ToolCalls: []model.ToolCall{call("f6", finishName, `{"reason": "done", "paths": ["../../etc/passwd"]}`)}},
				{ToolCalls: []model.ToolCall{call("f7", finishName, finishArgs)}},
			}}
			done := make(chan Outcome, 1)
			e := newEpisodeIn(t, backend, m, 20)
			e.Loop = settings.LoopLenient
			go func() { done <- e.Run(context.Background()) }()
			var out Outcome
			select {
			case out = <-done:
			case <-time.After(time.Minute):
				t.Fatal("the episode hangs (a FIFO submission blocked the host)")
			}
			wantOutcome(t, out, grader.StatusOK, 7)
			if !textcheck.Has(t, "the submission", string(out.Submission), "flagd-config") {
				t.FailNow()
			}
			for turn, want := range []string{"agent_output.json is a link out of the working directory", "not a regular file (a FIFO)",
				"Cannot hand back host-link: it is outside the working directory", "Cannot hand back up-link: it is outside the working directory",
				"Cannot hand back pipe: pipe: not a regular file", "Cannot hand back ../../etc/passwd: it is outside the working directory"} {
				results := toolResults(m.requests[turn+1])
				last := results[len(results)-1]
				if !last.IsError || !strings.Contains(last.Content, want) {
					t.Errorf("finish of turn %d: %+v, want an error with %q", turn+1, last, want)
				}
			}
		})
	}
}

// dyingSandbox is a sandbox whose agent dies at the command "die" or at the read of a
// submission, as a session says when a reply is not its agent's; other commands it runs.
type dyingSandbox struct {
	sandbox.Sandbox
	dieOnRead bool
	runs      []string // the commands that reached it
}

var errDied = fmt.Errorf("%w: a reply with id 1 to the request of id 2", sandbox.ErrGuestDied)

func (s *dyingSandbox) Run(ctx context.Context, cmd string, timeout time.Duration) (sandbox.Result, error) {
	s.runs = append(s.runs, cmd)
	if cmd == "die" {
		return sandbox.Result{}, errDied
	}
	return s.Sandbox.Run(ctx, cmd, timeout)
}

func (s *dyingSandbox) ReadFile(ctx context.Context, name string, limit int64) ([]byte, error) {
	if s.dieOnRead {
		return nil, errDied
	}
	return s.Sandbox.ReadFile(ctx, name, limit)
}

// TestGuestDeathEndsTheEpisode: once the sandbox's guest is dead (or its replies cannot be
// trusted), the episode ends as an error at once: no later call of the turn runs, the model
// is not asked again, and nothing is submitted.
func TestGuestDeathEndsTheEpisode(t *testing.T) {
	for name, c := range map[string]struct {
		dieOnRead bool
		calls     []model.ToolCall
	}{
		"command":    {calls: []model.ToolCall{shell("a", "die"), shell("b", "echo after"), call("f", finishName, finishArgs)}},
		"submission": {dieOnRead: true, calls: []model.ToolCall{shell("a", "echo '"+diagnosis+"' > agent_output.json"), call("f", finishName, finishArgs)}},
	} {
		t.Run(name, func(t *testing.T) {
			m := &script{replies: []model.Message{{ToolCalls: c.calls}, {ToolCalls: []model.ToolCall{shell("z", "echo next turn")}}}}
			e := newEpisode(t, m, 10)
			sb := &dyingSandbox{Sandbox: e.Sandbox, dieOnRead: c.dieOnRead}
			e.Sandbox = sb
			out := e.Run(context.Background())
			wantOutcome(t, out, grader.StatusError, 1)
			if !errors.Is(out.Err, sandbox.ErrGuestDied) {
				t.Errorf("error %v, want %v", out.Err, sandbox.ErrGuestDied)
			}
			if out.Submission != nil {
				t.Errorf("a submission %q, want none", out.Submission)
			}
			if t.Failed() {
				t.FailNow()
			}
			if len(m.requests) != 1 || len(sb.runs) != 1 {
				t.Fatalf("after the death: %d model calls, commands %q", len(m.requests), sb.runs)
			}
		})
	}
}

// TestUnsentResultsOfTheLastTurn: the results of the last turn's calls, which no call sends
// when the episode ends right after them (at the turn cap, on a finish), are in the outcome;
// results a later call sent are not.
func TestUnsentResultsOfTheLastTurn(t *testing.T) {
	capped := &script{replies: []model.Message{{ToolCalls: []model.ToolCall{shell("a", "echo one")}}, {ToolCalls: []model.ToolCall{shell("b", "echo two")}}}}
	out := newEpisode(t, capped, 2).Run(context.Background())
	if out.Status != grader.StatusMaxTurns {
		t.Errorf("at the turn cap: status %s, want %s", out.Status, grader.StatusMaxTurns)
	}
	if len(out.Unsent) != 1 {
		t.Fatalf("at the turn cap: %d unsent results, want 1: %+v", len(out.Unsent), out)
	}
	if id := out.Unsent[0].ToolCallID; id != "b" {
		t.Errorf("at the turn cap: the unsent result answers %q, want b", id)
	}
	if !textcheck.Has(t, "the unsent result at the turn cap", out.Unsent[0].Content, "two") || t.Failed() {
		t.FailNow()
	}
	finished := &script{replies: []model.Message{{ToolCalls: []model.ToolCall{
		shell("w", "echo '"+diagnosis+"' > agent_output.json"), call("f", finishName, finishArgs)}}}}
	out = newEpisode(t, finished, 10).Run(context.Background())
	if out.Status != grader.StatusOK {
		t.Errorf("on a finish: status %s, want %s", out.Status, grader.StatusOK)
	}
	var ids []string
	for _, u := range out.Unsent {
		ids = append(ids, u.ToolCallID)
	}
	if !slices.Equal(ids, []string{"w", "f"}) {
		t.Errorf("on a finish: unsent results answer %q, want [w f]", ids)
	}
	if t.Failed() {
		t.Fatalf("on a finish: %+v", out)
	}

	sent := &script{replies: []model.Message{{ToolCalls: []model.ToolCall{shell("a", "echo one")}}, {Content: "no call"}}}
	if out = newEpisode(t, sent, 2).Run(context.Background()); out.Unsent != nil {
		t.Fatalf("results the second call sent: %+v", out.Unsent)
	}
}
