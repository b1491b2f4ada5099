package gateway_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// inAnswerFailures are failures each protocol reports inside a 200 answer, a whole one and
// a stream's first event: transient ones, which the gateway retries as it retries a 529 or a
// 500, and one that is not, which goes back to the agent as it came.
var inAnswerFailures = []struct {
	name      string
	protocol  gateway.Protocol
	stream    bool
	answer    string
	transient bool
}{
	{"Anthropic overloaded, whole", gateway.Messages, false,
		`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, true},
	{"Anthropic overloaded, streamed", gateway.Messages, true,
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n", true},
	{"Anthropic refusal, streamed", gateway.Messages, true,
		"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":\"bad block\"}}\n\n", false},
	{"Responses failed, whole", gateway.Responses, false,
		`{"id":"resp_1","object":"response","status":"failed","error":{"code":"server_error","message":"try again"},"output":[]}`, true},
	{"Responses failed, streamed", gateway.Responses, true,
		"event: response.failed\ndata: {\"type\":\"response.failed\",\"response\":{\"id\":\"resp_1\",\"status\":\"failed\",\"error\":{\"code\":\"rate_limit_exceeded\",\"message\":\"slow\"}}}\n\n", true},
	{"Responses error event", gateway.Responses, true,
		"event: error\ndata: {\"type\":\"error\",\"code\":\"server_error\",\"message\":\"oops\",\"param\":null}\n\n", true},
	{"Responses refusal, whole", gateway.Responses, false,
		`{"id":"resp_1","object":"response","status":"failed","error":{"code":"invalid_prompt","message":"no"},"output":[]}`, false},
	{"OpenRouter error chunk", gateway.Chat, true,
		`data: {"id":"gen-1","object":"chat.completion.chunk","error":{"code":502,"message":"provider down"},"choices":[]}` + "\n\n", true},
	{"OpenRouter error answer", gateway.Chat, false,
		`{"id":"gen-1","error":{"code":503,"message":"no capacity"}}`, true},
}

// failing answers with a 200 that carries a failure, streamed or whole.
func failing(stream bool, text string) answer {
	if stream {
		return streamed([]string{text}, nil)
	}
	return status(http.StatusOK, text)
}

// TestRetriesFailuresInAnswers: a transient failure in a 200 answer, or as a stream's first
// event, is retried before anything goes back to the agent, which reads the next answer
// whole; the trajectory keeps the failed attempt and the retry. One no retry cures reaches
// the agent as it came, at once.
func TestRetriesFailuresInAnswers(t *testing.T) {
	for _, c := range inAnswerFailures {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, c.protocol, failing(c.stream, c.answer))
			e := newEpisode(t, f, nil)
			resp, body := e.call(t, c.protocol, runModel, c.stream)
			if resp.StatusCode != http.StatusOK {
				t.Errorf("the agent got status %d", resp.StatusCode)
			}
			want, calls := c.answer, 1
			if c.transient {
				calls = 2
				want = plainAnswers[c.protocol]
				if c.stream {
					want = strings.Join(streamEvents[c.protocol], "")
				}
			}
			if body != want {
				t.Errorf("the agent read %q, want %q", body, want)
			}
			if f.calls() != calls {
				t.Errorf("the provider was called %d times, want %d", f.calls(), calls)
			}
			var kinds []string
			for _, ev := range e.recorded() {
				kinds = append(kinds, string(ev.Kind))
			}
			wantKinds := "request response no_usage" // an error passed on spent no tokens it knows of
			if c.transient {
				wantKinds = "request response retry response"
			}
			if got := strings.Join(kinds, " "); got != wantKinds {
				t.Errorf("recorded %s, want %s", got, wantKinds)
			}
			if tot := e.gw.Totals(); tot.Retries != calls-1 {
				t.Errorf("%d retries counted, want %d", tot.Retries, calls-1)
			}
		})
	}
}

// TestFailureInAnswerRetriesSpent: when the retries give up on failures in 200 answers, the
// agent reads the provider's last one as it came: a stream of its error event.
func TestFailureInAnswerRetriesSpent(t *testing.T) {
	c := inAnswerFailures[1] // Anthropic overloaded, streamed
	f := newProvider(t, c.protocol, failing(true, c.answer), failing(true, c.answer), failing(true, c.answer))
	e := newEpisode(t, f, func(cfg *gateway.Config) { cfg.Budget = 1 })
	resp, body := e.call(t, c.protocol, runModel, true)
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		t.Errorf("Content-Type %q, want the stream's", ct)
	}
	if body != c.answer {
		t.Errorf("the agent read %q, want the provider's error event %q", body, c.answer)
	}
	if f.calls() != 1 {
		t.Errorf("%d calls within a budget of 1 ns", f.calls())
	}
}

// TestFailureMidStreamGoesOn: an error event after the first is the agent's to handle (its
// client retries as it would against the provider): the gateway sent the stream's start
// already and cannot take it back.
func TestFailureMidStreamGoesOn(t *testing.T) {
	events := streamEvents[gateway.Messages]
	overloaded := inAnswerFailures[1].answer
	f := newProvider(t, gateway.Messages, streamed([]string{events[0], overloaded}, nil))
	e := newEpisode(t, f, nil)
	resp, body, _ := do(t, e.request(t, gateway.Messages, gateway.Messages.Path(), requestBody(gateway.Messages, runModel, true)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
	if !strings.HasSuffix(body, overloaded) {
		t.Errorf("the agent read %q, want the stream's start and its error event", body)
	}
	if f.calls() != 1 {
		t.Errorf("%d calls: a stream that had begun was retried", f.calls())
	}
	if n := countKind(e.recorded(), model.KindRetry); n != 0 {
		t.Errorf("%d retries recorded", n)
	}
}

func countKind(events []model.Event, kind model.EventKind) int {
	n := 0
	for _, ev := range events {
		if ev.Kind == kind {
			n++
		}
	}
	return n
}
