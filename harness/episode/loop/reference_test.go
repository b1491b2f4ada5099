package loop

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// The tests of this file pin down the reference loop: what Stirrup 0.1.9 sends, as its own code
// did against a scripted model (docs/fidelity.md), recorded as request counts, positions,
// roles and fields.

// lastMessage is the last message of a request.
func lastMessage(req model.Request) model.Message { return req.Messages[len(req.Messages)-1] }

// writeAnswer is a shell call that writes a valid agent_output.json.
func writeAnswer(id string) model.ToolCall {
	return shell(id, "echo '"+diagnosis+"' > agent_output.json")
}

// wantRequests stops the test unless the model was asked n times.
func wantRequests(t *testing.T, requests []model.Request, n int) {
	t.Helper()
	if len(requests) != n {
		t.Fatalf("%d requests, want %d", len(requests), n)
	}
}

// wantRefused checks, result by result, which tool results are errors (refused), and stops
// the test when one is not as wanted.
func wantRefused(t *testing.T, what string, results []model.Message, refused ...bool) {
	t.Helper()
	if len(results) != len(refused) {
		t.Fatalf("%s: %d results, want %d: %+v", what, len(results), len(refused), results)
	}
	for i, r := range results {
		if r.IsError != refused[i] {
			t.Errorf("%s: result %d (%s) is an error: %v, want %v", what, i+1, r.ToolCallID, r.IsError, refused[i])
		}
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestReferenceOffersFinishFirst(t *testing.T) {
	m := &script{replies: []model.Message{{ToolCalls: []model.ToolCall{writeAnswer("a")}}, {ToolCalls: []model.ToolCall{call("f", finishName, finishArgs)}}}}
	out := newEpisode(t, m, 10).Run(context.Background())
	if out.Status != grader.StatusOK || len(m.requests) != 2 {
		t.Fatalf("outcome = %+v after %d requests", out, len(m.requests))
	}
	for i, req := range m.requests {
		var names []string
		for _, tool := range req.Tools {
			names = append(names, tool.Name)
		}
		if want := []string{finishName, shellName}; !slices.Equal(names, want) {
			t.Errorf("request %d offers %q, want %q", i+1, names, want)
		}
	}
}

// warningIn is the turn warning a request ends with ("" when it ends otherwise).
func (e *Episode) warningIn(req model.Request, maxTurns int) string {
	last := lastMessage(req)
	for left := 1; left <= maxTurns; left++ {
		if last.Role == model.RoleUser && last.Content == e.texts.TurnsLeft(left) {
			return last.Content
		}
	}
	return ""
}

// TestReferenceWarningsStartAtTheSecondTurn: a warning ends each request in the last 20 turns
// but the first turn's: with a cap of 12 from request 2, with 30 from request 11 (as the
// oracle's requests had them), the last-turn one in the last request; no request follows it.
func TestReferenceWarningsStartAtTheSecondTurn(t *testing.T) {
	for maxTurns, wantFirst := range map[int]int{12: 2, 30: 11} {
		m := &script{} // never calls a tool
		e := newEpisode(t, m, maxTurns)
		out := e.Run(context.Background())
		wantOutcome(t, out, grader.StatusMaxTurns, maxTurns)
		wantRequests(t, m.requests, maxTurns)
		first := 0
		for i, req := range m.requests {
			want := ""
			if left := maxTurns - i; left <= warningTurns && i > 0 {
				want = e.texts.TurnsLeft(left)
			}
			if got := e.warningIn(req, maxTurns); got != want {
				t.Errorf("cap %d: request %d ends with warning %q, want %q", maxTurns, i+1, got, want)
			}
			if want != "" && first == 0 {
				first = i + 1
			}
		}
		if first != wantFirst {
			t.Errorf("cap %d: first warning in request %d, want %d", maxTurns, first, wantFirst)
		}
	}
}

// continues counts the nudges in a request.
func (e *Episode) continues(req model.Request) int {
	n := 0
	for _, msg := range req.Messages {
		if msg.Role == model.RoleUser && msg.Content == e.texts.Continue() {
			n++
		}
	}
	return n
}

func TestReferenceNudgesOnlyWithoutAWarning(t *testing.T) {
	for _, tc := range []struct {
		maxTurns  int
		continues int // in the second request, after a text-only first reply
	}{{12, 0}, {30, 1}, {22, 1}, {21, 0}} {
		t.Run(fmt.Sprint(tc.maxTurns, " turns"), func(t *testing.T) {
			m := &script{replies: []model.Message{{Content: "Let me think first."}, {ToolCalls: []model.ToolCall{writeAnswer("a")}},
				{ToolCalls: []model.ToolCall{call("f", finishName, finishArgs)}}}}
			e := newEpisode(t, m, tc.maxTurns)
			if out := e.Run(context.Background()); out.Status != grader.StatusOK || len(m.requests) != 3 {
				t.Fatalf("outcome = %+v after %d requests", out, len(m.requests))
			}
			second := m.requests[1]
			if got := e.continues(second); got != tc.continues {
				t.Errorf("request 2 has %d nudges, want %d", got, tc.continues)
			}
			if msg := second.Messages[2]; msg.Role != model.RoleAssistant {
				t.Errorf("request 2, message 3 is %s, want the text-only reply", msg.Role)
			}
			if tc.continues == 0 && e.warningIn(second, tc.maxTurns) == "" {
				t.Errorf("request 2 ends with %+v, want the warning alone", lastMessage(second))
			}
		})
	}
}

func TestReferenceFinishRunsWhereEmitted(t *testing.T) {
	m := &script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{call("f1", finishName, finishArgs), writeAnswer("a")}},
		{ToolCalls: []model.ToolCall{call("f2", finishName, finishArgs)}},
	}}
	out := newEpisode(t, m, 10).Run(context.Background())
	wantOutcome(t, out, grader.StatusOK, 2)
	if out.ToolCalls != 3 {
		t.Fatalf("%d tool calls, want 3", out.ToolCalls)
	}
	wantRequests(t, m.requests, 2)
	results := toolResults(m.requests[1])
	wantRefused(t, "turn 1", results, true, false)
	var ids []string
	for _, r := range results {
		ids = append(ids, r.ToolCallID)
	}
	if !slices.Equal(ids, []string{"f1", "a"}) {
		t.Fatalf("the results of turn 1 answer %q, want the finish, then the write [f1 a]", ids)
	}
}

func TestReferenceFinishNeedsReasonAndPaths(t *testing.T) {
	m := &script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{writeAnswer("a"), call("f1", finishName, `{"reason": "done"}`)}},
		{ToolCalls: []model.ToolCall{call("f2", finishName, `{"paths": ["agent_output.json"]}`)}},
		{ToolCalls: []model.ToolCall{call("f3", finishName, `{"reason": "done", "paths": null}`)}},
		{ToolCalls: []model.ToolCall{call("f4", finishName, ``)}},
		{ToolCalls: []model.ToolCall{call("f5", finishName, `{"reason": "done", "paths": ["agent_output.json"], "extra": 1}`)}},
	}}
	e := newEpisode(t, m, 10)
	out := e.Run(context.Background())
	if out.Status != grader.StatusOK || out.Turns != 5 {
		t.Fatalf("outcome = %+v", out)
	}
	for turn := 1; turn <= 4; turn++ {
		results := toolResults(m.requests[turn])
		if r := results[len(results)-1]; !r.IsError || r.Content != e.texts.FinishInvalidArguments() {
			t.Errorf("finish of turn %d: %+v, want refused as invalid arguments", turn, r)
		}
	}
}

func TestReferenceEmptyPathsEndTheEpisode(t *testing.T) {
	for _, tc := range []struct {
		name   string
		first  []model.ToolCall
		status string
	}{
		{"before the answer", []model.ToolCall{call("f", finishName, `{"reason": "cannot", "paths": []}`)}, grader.StatusNoSubmission},
		{"after the answer", []model.ToolCall{writeAnswer("a"), call("f", finishName, `{"reason": "done", "paths": []}`)}, grader.StatusOK},
		{"an unreadable answer", []model.ToolCall{shell("a", "echo nothing > agent_output.json"), call("f", finishName, finishArgs)}, grader.StatusInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &script{replies: []model.Message{{ToolCalls: tc.first}, {ToolCalls: []model.ToolCall{writeAnswer("b")}}}}
			out := newEpisode(t, m, 10).Run(context.Background())
			wantOutcome(t, out, tc.status, 1)
			wantRequests(t, m.requests, 1)
			if out.Err != nil {
				t.Fatalf("error %v, want none", out.Err)
			}
			if (out.Status == grader.StatusOK) != (out.Submission != nil) || (out.Status != grader.StatusOK && out.Reason == "") {
				t.Fatalf("outcome = %+v", out)
			}
		})
	}
}

// cutting is a script whose replies are cut at the output cap from its cutAt-th call on.
type cutting struct {
	script
	cutAt int
}

func (c *cutting) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	r, err := c.script.Complete(ctx, req)
	r.Cut = len(c.requests) >= c.cutAt
	return r, err
}

func TestReferenceCutReplyEndsTheEpisode(t *testing.T) {
	m := &cutting{script: script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{shell("a", "echo one")}},
		{ToolCalls: []model.ToolCall{writeAnswer("b"), call("f", finishName, finishArgs)}},
	}}, cutAt: 2}
	e := newEpisode(t, m, 10)
	e.MaxTokens = 500
	out := e.Run(context.Background())
	// The episode ends on the cut reply, none of its calls run.
	wantEndedOnTurn2(t, out, m.requests, grader.StatusOutputLimit, 1, "500")
	if out.Usage.Input != 200 {
		t.Errorf("%d input tokens, want 200", out.Usage.Input)
	}
}

// wantEndedOnTurn2 checks an episode that ended, with status, on its second reply before
// running any of its calls: two requests, the first turn's toolCalls alone run, no error, a
// reason that holds reason; it stops the test when any is not so.
func wantEndedOnTurn2(t *testing.T, out Outcome, requests []model.Request, status string, toolCalls int, reason string) {
	t.Helper()
	wantOutcome(t, out, status, 2)
	wantRequests(t, requests, 2)
	if out.ToolCalls != toolCalls {
		t.Errorf("%d tool calls, want %d (the first turn's)", out.ToolCalls, toolCalls)
	}
	if out.Err != nil {
		t.Errorf("err %v, want none", out.Err)
	}
	if !textcheck.Has(t, "the reason", out.Reason, reason) || t.Failed() {
		t.FailNow()
	}
}

func TestReferenceCutSummaryEndsTheEpisode(t *testing.T) {
	m := &cutting{script: script{replies: []model.Message{{ToolCalls: []model.ToolCall{shell("a", "echo one")}}}}, cutAt: 2}
	e := newEpisode(t, m, 10)
	e.MaxTokens = 100 // 110 tokens of the first reply reach 70% of it
	out := e.Run(context.Background())
	wantOutcome(t, out, grader.StatusOutputLimit, 1)
	wantRequests(t, m.requests, 2)
	if !m.requests[1].Summary {
		t.Errorf("request 2 is no summary request")
	}
	if out.Summaries != 1 {
		t.Errorf("%d summaries, want 1", out.Summaries)
	}
	if t.Failed() {
		t.FailNow()
	}
}

// TestReferenceMalformedArgumentsEndTheEpisode: a reply with a call whose arguments are not
// JSON ends the episode before any of its calls runs, as Stirrup's default logger raises on
// it (the oracle: one request, then the library raised); blank arguments and JSON that is
// not an object are refused as invalid and the episode goes on.
func TestReferenceMalformedArgumentsEndTheEpisode(t *testing.T) {
	m := &script{replies: []model.Message{
		{ToolCalls: []model.ToolCall{call("f0", finishName, "  "), call("a", shellName, `["ls"]`), shell("c", "echo one > first.txt")}},
		{ToolCalls: []model.ToolCall{shell("b", "echo one > ran.txt"), call("f1", finishName, `{not json`)}},
	}}
	e := newEpisode(t, m, 10)
	out := e.Run(context.Background())
	// The episode ends on turn 2, none of its calls run.
	wantEndedOnTurn2(t, out, m.requests, grader.StatusInvalidArguments, 3, "{not json")
	first := toolResults(m.requests[1])
	wantRefused(t, "turn 1 (the finish and the list refused, the write run)", first, true, true, false)
	if _, err := e.Sandbox.ReadFile(context.Background(), "first.txt", 100); err != nil {
		t.Fatalf("turn 1's write: %v", err)
	}
	if _, err := e.Sandbox.ReadFile(context.Background(), "ran.txt", 100); err == nil {
		t.Error("a call of the malformed reply ran")
	}
}

// overflowingAt fails its n-th call with a context overflow.
type overflowingAt struct {
	script
	at int
}

func (o *overflowingAt) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	if len(o.requests)+1 == o.at {
		o.requests = append(o.requests, req)
		return model.Reply{}, fmt.Errorf("HTTP 400: %w", model.ErrContextOverflow)
	}
	return o.script.Complete(ctx, req)
}

func TestReferenceOverflowEndsTheEpisode(t *testing.T) {
	m := &overflowingAt{script: script{replies: []model.Message{{ToolCalls: []model.ToolCall{shell("a", "echo one")}}}}, at: 2}
	out := newEpisode(t, m, 10).Run(context.Background())
	wantOutcome(t, out, grader.StatusContextOverflow, 2)
	wantRequests(t, m.requests, 2)
	if out.Summaries != 0 {
		t.Errorf("%d summaries, want none", out.Summaries)
	}
	if out.Err != nil {
		t.Errorf("error %v, want none", out.Err)
	}
	if out.Reason == "" {
		t.Errorf("no reason given for the end")
	}
	if t.Failed() {
		t.FailNow()
	}
}

func TestReferenceSummarisesAgainstMaxTokens(t *testing.T) {
	for _, tc := range []struct {
		used      int64
		summaries int
	}{{979, 0}, {980, 4}} { // 70% of 1400 is 980
		t.Run(fmt.Sprint(tc.used), func(t *testing.T) {
			m := &sized{usage: []int64{tc.used, tc.used, tc.used, tc.used, tc.used}}
			for range 5 {
				m.replies = append(m.replies, model.Message{ToolCalls: []model.ToolCall{shell("a", "echo turn")}})
			}
			e := newEpisode(t, m, 5)
			e.MaxTokens, e.ContextWindow = 1400, 1_000_000 // the window is the lenient loop's
			out := e.Run(context.Background())
			wantOutcome(t, out, grader.StatusMaxTurns, 5)
			if out.Summaries != tc.summaries {
				t.Fatalf("%d summaries, want %d", out.Summaries, tc.summaries)
			}
			wantRequests(t, m.requests, 5+tc.summaries)
			if tc.summaries == 0 {
				return
			}
			// Requests: turn 1, summary, turn 2, summary, ..., turn 5: none after the last turn.
			for i, req := range m.requests {
				if req.Summary != (i%2 == 1) {
					t.Fatalf("request %d: summary %v", i+1, req.Summary)
				}
				if req.Tools[0].Name != finishName {
					t.Errorf("request %d offers %s first", i+1, req.Tools[0].Name)
				}
			}
			after := m.requests[2].Messages
			if len(after) != 5 {
				t.Fatalf("history after the summary of %d messages, want 5: %+v", len(after), after)
			}
			if after[0].Role != model.RoleSystem {
				t.Errorf("history after the summary begins with a message of role %s, want system", after[0].Role)
			}
			textcheck.Has(t, "the summary in the history", after[2].Content, "flagd-config changed")
			if after[3].Content != e.texts.SummaryAck() {
				t.Errorf("the history's fourth message %q, want the summary's acknowledgement %q", after[3].Content, e.texts.SummaryAck())
			}
			if after[4].Content != e.texts.TurnsLeft(4) {
				t.Errorf("the history's last message %q, want %q", after[4].Content, e.texts.TurnsLeft(4))
			}
			if t.Failed() {
				t.Fatalf("history after the summary = %+v", after)
			}
			for _, msg := range after[1:] {
				if msg.Role != model.RoleUser {
					t.Errorf("after the summary a %s message: %q", msg.Role, msg.Content)
				}
			}
		})
	}
}

func TestReferenceNudgeFollowsTheSummary(t *testing.T) {
	m := &sized{script: script{replies: []model.Message{{Content: "thinking"}, {ToolCalls: []model.ToolCall{writeAnswer("a")}},
		{ToolCalls: []model.ToolCall{call("f", finishName, finishArgs)}}}}, usage: []int64{900}}
	e := newEpisode(t, m, 30)
	e.MaxTokens = 1000
	if out := e.Run(context.Background()); out.Status != grader.StatusOK || out.Summaries != 1 {
		t.Fatalf("outcome = %+v", out)
	}
	next := m.requests[2].Messages
	if len(next) != 5 {
		t.Fatalf("the turn after a summary of a text-only reply got %d messages, want 5: %+v", len(next), next)
	}
	if next[3].Content != e.texts.SummaryAck() {
		t.Errorf("message 4 after the summary: %q, want the summary's acknowledgement %q", next[3].Content, e.texts.SummaryAck())
	}
	if next[4].Content != e.texts.Continue() {
		t.Errorf("message 5 after the summary: %q, want the continue text %q", next[4].Content, e.texts.Continue())
	}

}
