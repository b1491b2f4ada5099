package gateway_test

import (
	"bufio"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/harness/gateway"
	"github.com/aa-grade/aa-grade/harness/model"
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
				if len(ts.got) != 1 || strings.Join(ts.lines, " ") != "request response turn request response" {
					t.Fatalf("lines %v, turns %+v", ts.lines, ts.got)
				}
				got := ts.got[0]
				want := model.Usage{Input: 11, Output: 7}
				if got.n != 1 || got.err != nil || got.reply.Message.Content != "Hello" || got.reply.Usage != want || got.reply.Cut {
					t.Errorf("turn %+v", got)
				}
				if m := got.req.Messages; len(m) != 1 || m[0].Role != model.RoleUser || m[0].Content != "Hi" {
					t.Errorf("the request read as %+v", m)
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
	if odd := ts.got[2]; odd.err != nil || len(odd.req.Messages) != 0 || odd.reply.Message.Content != "Hello" {
		t.Errorf("an unreadable request's turn %+v", odd)
	}
	if err := ts.got[0].err; err == nil || !strings.Contains(err.Error(), "bad tool schema") {
		t.Errorf("a refused call's turn has the error %v", err)
	}
	if cut := ts.got[1]; cut.n != 2 || cut.err == nil || !strings.Contains(cut.err.Error(), "cut") || cut.reply.Message.Content != "Hello" {
		t.Errorf("a cut stream's turn %+v", cut)
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
			f := &provider{protocol: tc.p, srv: httptest.NewServer(cli)}
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
			calls := first.reply.Message.ToolCalls
			if first.err != nil || len(calls) != 1 || calls[0].ID != tc.id || calls[0].Name != tc.name || calls[0].Arguments != tc.arguments {
				t.Errorf("first turn %+v", first)
			}
			if len(first.req.Tools) != 1 || first.req.Tools[0].Name != tc.name || len(first.req.Messages) != 2 || first.req.Messages[0].Role != model.RoleSystem {
				t.Errorf("first request read as %+v", first.req)
			}
			m := second.req.Messages
			if second.err != nil || second.reply.Message.Content != "done" || len(m) != 4 || m[2].Role != model.RoleAssistant || len(m[2].ToolCalls) != 1 ||
				m[3].Role != tc.resultRole || m[3].ToolCallID != tc.id || m[3].Content != "[]" {
				t.Errorf("second turn %+v", second)
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
	if len(ts.got) != 1 || ts.got[0].err != nil || ts.got[0].reply.Message.Content != "Hello" {
		t.Fatalf("turns %+v", ts.got)
	}
	for _, ev := range e.recorded() {
		if ev.Kind == model.KindResponse && ev.Error != "" {
			t.Errorf("the answer is recorded as failed: %s", ev.Error)
		}
	}
}
