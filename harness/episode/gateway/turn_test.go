package gateway_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
)

// turns collects what an episode's gateway tells Turn, and what it records, in one order.
type turns struct {
	mu    sync.Mutex
	lines []string // the kinds of the lines, in order: request, response, ..., turn
	got   []gotTurn
}

type gotTurn struct {
	n     int
	req   model.Request
	reply model.Reply
	err   error
}

func (ts *turns) hook(c *gateway.Config) {
	record := c.Record
	c.Record = func(e model.Event) {
		record(e)
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.lines = append(ts.lines, string(e.Kind))
	}
	c.Turn = func(n int, req model.Request, reply model.Reply, err error) {
		ts.mu.Lock()
		defer ts.mu.Unlock()
		ts.lines = append(ts.lines, "turn")
		ts.got = append(ts.got, gotTurn{n, req, reply, err})
	}
}

// wantReply checks a turn: no error, and the reply's text content; it says whether both are
// as wanted.
func wantReply(t *testing.T, what string, got gotTurn, content string) bool {
	t.Helper()
	ok := true
	if got.err != nil {
		t.Errorf("%s failed: %v", what, got.err)
		ok = false
	}
	if got.reply.Message.Content != content {
		t.Errorf("%s replied %q, want %q", what, got.reply.Message.Content, content)
		ok = false
	}
	return ok
}

// roles is the roles of messages, in order.
func roles(messages []model.Message) []string {
	var r []string
	for _, m := range messages {
		r = append(r, m.Role)
	}
	return r
}

// TestTurns: each call passed on is told as a turn after its lines, plain and streamed
// alike, its request and reply read in the protocol's terms; refused calls are none.
func TestTurns(t *testing.T) {
	for _, p := range protocols {
		for _, stream := range []bool{false, true} {
			t.Run(p.String()+boolText(stream), func(t *testing.T) {
				var ts turns
				e := newEpisode(t, newProvider(t, p), ts.hook)
				e.call(t, p, runModel, stream)
				e.call(t, p, "another-model", stream) // refused: no turn
				if got, want := strings.Join(ts.lines, " "), "request response turn request response"; got != want {
					t.Errorf("lines %q, want %q", got, want)
				}
				if len(ts.got) != 1 {
					t.Fatalf("%d turns, want 1: %+v", len(ts.got), ts.got)
				}
				got := ts.got[0]
				if got.n != 1 {
					t.Errorf("the turn is number %d, want 1", got.n)
				}
				wantReply(t, "the turn", got, "Hello")
				if want := (model.Usage{Input: 11, Output: 7}); got.reply.Usage != want {
					t.Errorf("the turn's usage %+v, want %+v", got.reply.Usage, want)
				}
				if got.reply.Cut {
					t.Errorf("the turn's reply is cut")
				}
				if got, want := got.req.Messages, []model.Message{{Role: model.RoleUser, Content: "Hi"}}; !reflect.DeepEqual(got, want) {
					t.Errorf("the request read as %+v, want %+v", got, want)
				}
			})
		}
	}
}

// TestTurnFailures: a call the provider refuses, or whose stream is cut, is a turn with its
// error (a cut stream with what came of its reply); a request that reads as no conversation
// is a turn of no messages.
func TestTurnFailures(t *testing.T) {
	var ts turns
	f := newProvider(t, gateway.Chat, status(http.StatusBadRequest, `{"error":{"message":"bad tool schema","type":"invalid_request_error"}}`),
		cut(streamEvents[gateway.Chat], 2))
	e := newEpisode(t, f, ts.hook)
	e.call(t, gateway.Chat, runModel, false)
	do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, runModel, true)))
	// A request the gateway cannot read as a conversation still passes: its turn shows no
	// messages, and the reply.
	do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), `{"model":"`+runModel+`","messages":"Hi"}`))
	if len(ts.got) != 3 {
		t.Fatalf("turns %+v", ts.got)
	}
	odd := ts.got[2]
	wantReply(t, "an unreadable request's turn", odd, "Hello")
	if len(odd.req.Messages) != 0 {
		t.Errorf("an unreadable request read as %+v, want no messages", odd.req.Messages)
	}
	if err := ts.got[0].err; err == nil || !strings.Contains(err.Error(), "bad tool schema") {
		t.Errorf("a refused call's turn has the error %v", err)
	}
	cut := ts.got[1]
	if cut.n != 2 {
		t.Errorf("a cut stream's turn is number %d, want 2", cut.n)
	}
	if cut.err == nil || !strings.Contains(cut.err.Error(), "cut") {
		t.Errorf("a cut stream's turn has the error %v, want one saying cut", cut.err)
	}
	if cut.reply.Message.Content != "Hello" {
		t.Errorf("a cut stream's turn replied %q, want the text read, %q", cut.reply.Message.Content, "Hello")
	}
}

// TestTurnsOfFakeCLI: the streams fakecli sends, as Claude Code and Codex get them, read as a
// shell call and then the final text, their ids, names and arguments whole.
func TestTurnsOfFakeCLI(t *testing.T) {
	cli := &fakecli.Server{Script: fakecli.Script{Command: "cat alerts.json", Final: "done"}}
	for _, tc := range []struct {
		p          gateway.Protocol
		first      string // the request of the first turn
		id, name   string
		arguments  string
		second     string // the second, with the call and its result
		resultRole string
	}{
		{gateway.Messages,
			`{"model":"run-model-1","max_tokens":100,"stream":true,"system":[{"type":"text","text":"You are an agent."}],` +
				`"messages":[{"role":"user","content":[{"type":"text","text":"Investigate."}]}],` +
				`"tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`,
			"toolu_fake1", "Bash", `{"command":"cat alerts.json","description":"Investigate"}`,
			`{"model":"run-model-1","max_tokens":100,"stream":true,"system":[{"type":"text","text":"You are an agent."}],` +
				`"messages":[{"role":"user","content":[{"type":"text","text":"Investigate."}]},` +
				`{"role":"assistant","content":[{"type":"tool_use","id":"toolu_fake1","name":"Bash","input":{"command":"cat alerts.json","description":"Investigate"}}]},` +
				`{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_fake1","content":"[]"}]}],` +
				`"tools":[{"name":"Bash","description":"Run a command","input_schema":{"type":"object","properties":{"command":{"type":"string"}}}}]}`,
			model.RoleTool},
		{gateway.Responses,
			`{"model":"run-model-1","stream":true,"instructions":"You are an agent.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Investigate."}]}],` +
				`"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`,
			"call_fake1", "exec_command", `{"cmd":"cat alerts.json"}`,
			`{"model":"run-model-1","stream":true,"instructions":"You are an agent.","input":[{"type":"message","role":"user","content":[{"type":"input_text","text":"Investigate."}]},` +
				`{"type":"function_call","call_id":"call_fake1","name":"exec_command","arguments":"{\"cmd\":\"cat alerts.json\"}"},` +
				`{"type":"function_call_output","call_id":"call_fake1","output":"[]"}],` +
				`"tools":[{"type":"function","name":"exec_command","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}]}`,
			model.RoleTool},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			var ts turns
			f := &fakeProvider{protocol: tc.p, srv: httptest.NewServer(cli)}
			t.Cleanup(f.srv.Close)
			e := newEpisode(t, f, ts.hook)
			for _, body := range []string{tc.first, tc.second} {
				if resp, _, err := do(t, e.request(t, tc.p, tc.p.Path(), body)); err != nil || resp.StatusCode != http.StatusOK {
					t.Fatalf("call: %v, %v", resp.Status, err)
				}
			}
			if len(ts.got) != 2 {
				t.Fatalf("turns %+v", ts.got)
			}
			first, second := ts.got[0], ts.got[1]
			if first.err != nil {
				t.Errorf("first turn: %v", first.err)
			}
			if got, want := first.reply.Message.ToolCalls, []model.ToolCall{{ID: tc.id, Name: tc.name, Arguments: tc.arguments}}; !slices.Equal(got, want) {
				t.Errorf("first turn's calls %+v, want %+v", got, want)
			}
			var tools []string
			for _, tool := range first.req.Tools {
				tools = append(tools, tool.Name)
			}
			if want := []string{tc.name}; !slices.Equal(tools, want) {
				t.Errorf("first request's tools %q, want %q", tools, want)
			}
			if got := roles(first.req.Messages); len(got) != 2 || got[0] != model.RoleSystem {
				t.Errorf("first request's messages of roles %q, want 2, the system's first", got)
			}
			wantReply(t, "second turn", second, "done")
			m := second.req.Messages
			got := roles(m)
			if len(got) != 4 {
				t.Fatalf("second request's messages of roles %q, want 4", got)
			}
			if want := []string{model.RoleAssistant, tc.resultRole}; !slices.Equal(got[2:], want) {
				t.Errorf("second request's messages end with roles %q, want %q", got[2:], want)
			}
			if len(m[2].ToolCalls) != 1 {
				t.Errorf("second request's assistant message has %d calls, want 1: %+v", len(m[2].ToolCalls), m[2])
			}
			if m[3].ToolCallID != tc.id {
				t.Errorf("second request's result is of the call %q, want %q", m[3].ToolCallID, tc.id)
			}
			if m[3].Content != "[]" {
				t.Errorf("second request's result %q, want %q", m[3].Content, "[]")
			}
		})
	}
}

// TestStreamEndsAtItsLastEvent: the agent's answer ends with the stream's last event, even
// when the provider holds its connection open after it; an agent that hangs up once it has
// that event (as Codex does) got the whole answer: neither the call nor its turn failed.
func TestStreamEndsAtItsLastEvent(t *testing.T) {
	events := streamEvents[gateway.Messages]
	f := newProvider(t, gateway.Messages, func(w http.ResponseWriter, r *http.Request) {
		streamed(events, nil)(w, r)
		<-r.Context().Done() // until the gateway lets go
	})
	var ts turns
	e := newEpisode(t, f, ts.hook)
	resp, err := http.DefaultClient.Do(e.request(t, gateway.Messages, gateway.Messages.Path(), requestBody(gateway.Messages, runModel, true)))
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(resp.Body)
	for range events {
		if _, err := firstEvent(r); err != nil {
			t.Fatalf("reading the events: %v", err)
		}
	}
	resp.Body.Close() // hangs up at once, as Codex does
	e.srv.Close()     // waits for the call to end
	if len(ts.got) != 1 {
		t.Fatalf("%d turns, want 1: %+v", len(ts.got), ts.got)
	}
	if !wantReply(t, "the turn", ts.got[0], "Hello") {
		t.FailNow()
	}
	for _, ev := range e.recorded() {
		if ev.Kind == model.KindResponse && ev.Error != "" {
			t.Errorf("the answer is recorded as failed: %s", ev.Error)
		}
	}
}
