package provider

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// responsesToolAnswer is a Responses API answer in the shape OpenAI sends: an encrypted
// reasoning item, a short message and two function calls (one with arguments that are not
// JSON).
const responsesToolAnswer = `{"id":"resp_1","object":"response","status":"completed","error":null,"incomplete_details":null,
 "output":[
  {"id":"rs_1","type":"reasoning","status":null,"encrypted_content":"gAAAAABenc-first==","summary":[{"type":"summary_text","text":"**Reading the alerts**"}]},
  {"id":"msg_1","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Checking alerts and events.","annotations":[]}]},
  {"id":"fc_1","type":"function_call","status":"completed","call_id":"call_1","name":"code_exec","arguments":"{\"cmd\": \"ls alerts\"}"},
  {"id":"fc_2","type":"function_call","status":"completed","call_id":"call_2","name":"code_exec","arguments":"{not json"}],
 "usage":{"input_tokens":5200,"input_tokens_details":{"cached_tokens":4096},"output_tokens":310,"output_tokens_details":{"reasoning_tokens":250},"total_tokens":5510}}`

const responsesTextAnswer = `{"id":"resp_2","object":"response","status":"completed","error":null,
 "output":[{"id":"msg_2","type":"message","role":"assistant","content":[{"type":"output_text","text":"The root cause is the flagd ConfigMap."}]}],
 "usage":{"input_tokens":900,"output_tokens":12}}`

// recordedResponses is a Responses API provider whose calls are recorded.
type recordedResponses struct {
	*OpenAIResponses
	events *[]model.Event
}

func (r recordedResponses) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	return r.OpenAIResponses.Complete(recording(ctx, r.events), req)
}

func newResponses(t *testing.T, f *fakeChat) (recordedResponses, *[]model.Event) {
	f.path = "/v1/responses"
	var events []model.Event
	return recordedResponses{&OpenAIResponses{testOptions(t, f)}, &events}, &events
}

var responsesTools = []model.Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object","properties":{"cmd":{"type":"string"}}}`)},
	{Name: "finish", Description: "done", Parameters: json.RawMessage(`{"type":"object"}`)}}

// TestResponsesRequestAndToolCalls: a call goes with its key, its answer reads as a reply
// (text, calls, the reasoning item kept, usage) and is recorded without the key; the request's
// shape is testdata/requests/responses-*.json's (TestGoldenRequests).
func TestResponsesRequestAndToolCalls(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, responsesToolAnswer)}}
	m, events := newResponses(t, f)
	reply, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{
		{Role: model.RoleSystem, Content: "system"},
		{Role: model.RoleUser, Content: "task"},
	}, Tools: responsesTools})
	if err != nil {
		t.Fatal(err)
	}
	if f.auth[0] != "Bearer "+testKey {
		t.Errorf("Authorization = %q", f.auth[0])
	}
	msg := reply.Message
	if msg.Content != "Checking alerts and events." {
		t.Errorf("content = %q", msg.Content)
	}
	if want := []model.ToolCall{{ID: "call_1", Name: "code_exec", Arguments: `{"cmd": "ls alerts"}`}, {ID: "call_2", Name: "code_exec", Arguments: "{not json"}}; !slices.Equal(msg.ToolCalls, want) {
		t.Fatalf("tool calls %+v, want %+v", msg.ToolCalls, want)
	}
	if got := gjson.GetBytes(msg.Opaque, "0.encrypted_content").String(); got != "gAAAAABenc-first==" {
		t.Errorf("reasoning kept = %s", msg.Opaque)
	}
	if u := reply.Usage; u != (model.Usage{Input: 5200, CachedRead: 4096, Output: 310, Reasoning: 250}) {
		t.Errorf("usage = %+v", u)
	}
	if got := eventKinds(*events); got != "request response" {
		t.Fatalf("events %s, want request response", got)
	}
	assertNoKey(t, *events)
}

func assertNoKey(t *testing.T, events []model.Event) {
	t.Helper()
	for _, e := range events {
		if b, _ := json.Marshal(e); strings.Contains(string(b), testKey) {
			t.Fatalf("the key is in a recorded event: %s", b)
		}
	}
}

func TestResponsesTextOnlyReplyAndUnsetOptions(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, responsesTextAnswer)}}
	m, _ := newResponses(t, f)
	m.MaxTokens, m.ReasoningEffort = 0, ""
	reply, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}, Tools: responsesTools})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reply.Message.Content, "The root cause is the flagd ConfigMap."; got != want {
		t.Errorf("replied %q, want %q", got, want)
	}
	if calls := reply.Message.ToolCalls; len(calls) != 0 {
		t.Errorf("tool calls %+v, want none", calls)
	}
	if reply.Message.Opaque != nil {
		t.Errorf("reasoning to pass back %s, want none", reply.Message.Opaque)
	}
	if t.Failed() {
		t.FailNow()
	}
	if u := reply.Usage; u != (model.Usage{Input: 900, Output: 12}) {
		t.Errorf("usage = %+v", u)
	}
	sent := gjson.ParseBytes(f.received[0])
	for _, absent := range []string{"instructions", "reasoning", "max_output_tokens"} {
		if sent.Get(absent).Exists() {
			t.Errorf("request has %s though it is unset: %s", absent, f.received[0])
		}
	}
}

// Without Reference (the lenient loop, the judge), the reasoning of one reply goes back, encrypted
// content and summary unchanged, ahead of the calls it led to, in the next request; and a
// reply with neither text nor call sends nothing back.
func TestResponsesSendsReasoningBack(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, responsesToolAnswer), status(200, responsesTextAnswer)}}
	m, events := newResponses(t, f)
	conv := []model.Message{{Role: model.RoleSystem, Content: "system"}, {Role: model.RoleUser, Content: "task"}}
	first, err := m.Complete(context.Background(), model.Request{Messages: conv, Tools: responsesTools})
	if err != nil {
		t.Fatal(err)
	}
	// The JSON round trip is what a resumed or replayed conversation goes through.
	b, _ := json.Marshal(first.Message)
	var kept model.Message
	if err := json.Unmarshal(b, &kept); err != nil {
		t.Fatal(err)
	}
	conv = append(conv, kept,
		model.Message{Role: model.RoleTool, ToolCallID: "call_1", Content: "<shell_results>a.json</shell_results>"},
		model.Message{Role: model.RoleTool, ToolCallID: "call_2", Content: "Invalid arguments", IsError: true},
		model.Message{Role: model.RoleAssistant, Opaque: json.RawMessage(`[{"type":"reasoning","encrypted_content":"led-nowhere","summary":[]}]`)},
		model.Message{Role: model.RoleUser, Content: "Continue."})
	if _, err := m.Complete(context.Background(), model.Request{Messages: conv, Tools: responsesTools}); err != nil {
		t.Fatal(err)
	}
	received := gjson.Get(responsesToolAnswer, "output.0")
	sent := gjson.ParseBytes(f.received[1])
	want := []string{
		`{"type":"message","role":"user","content":"task"}`,
		`{"type":"reasoning","encrypted_content":"gAAAAABenc-first==","summary":[{"type":"summary_text","text":"**Reading the alerts**"}]}`,
		`{"type":"message","role":"assistant","content":"Checking alerts and events."}`,
		`{"type":"function_call","call_id":"call_1","name":"code_exec","arguments":"{\"cmd\": \"ls alerts\"}"}`,
		`{"type":"function_call","call_id":"call_2","name":"code_exec","arguments":"{not json"}`,
		`{"type":"function_call_output","call_id":"call_1","output":"<shell_results>a.json</shell_results>"}`,
		`{"type":"function_call_output","call_id":"call_2","output":"Invalid arguments"}`,
		`{"type":"message","role":"user","content":"Continue."}`,
	}
	input := sent.Get("input").Array()
	if len(input) != len(want) {
		t.Fatalf("second request input has %d items, want %d: %s", len(input), len(want), sent.Get("input").Raw)
	}
	for i, w := range want {
		if !sameJSON(t, input[i].Raw, w) {
			t.Errorf("input[%d] = %s, want %s", i, input[i].Raw, w)
		}
	}
	if sent.Get("input.1.encrypted_content").String() != received.Get("encrypted_content").String() ||
		!sameJSON(t, sent.Get("input.1.summary").Raw, received.Get("summary").Raw) {
		t.Errorf("reasoning sent back %s differs from the one received %s", sent.Get("input.1").Raw, received.Raw)
	}
	assertNoKey(t, *events)
}

func sameJSON(t *testing.T, a, b string) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal([]byte(a), &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal([]byte(b), &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	xs, _ := json.Marshal(x)
	ys, _ := json.Marshal(y)
	return string(xs) == string(ys)
}

// An incomplete response is a reply: its text and its calls, a call cut short included.
func TestResponsesIncompleteIsAReply(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, `{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"error":null,
 "output":[{"type":"reasoning","encrypted_content":"cut","summary":[]},
  {"type":"function_call","status":"incomplete","call_id":"call_9","name":"code_exec","arguments":"{\"cmd\": \"grep -c Warn"}],
 "usage":{"input_tokens":100,"output_tokens":4096,"output_tokens_details":{"reasoning_tokens":4000}}}`)}}
	m, _ := newResponses(t, f)
	reply, err := m.Complete(context.Background(),
		model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
	if err != nil {
		t.Fatal(err)
	}
	calls := reply.Message.ToolCalls
	if len(calls) != 1 {
		t.Fatalf("calls = %+v, want one", calls)
	}
	if calls[0].ID != "call_9" {
		t.Errorf("the call's id %q, want call_9", calls[0].ID)
	}
	if want := `{"cmd": "grep -c Warn`; calls[0].Arguments != want {
		t.Errorf("the call's arguments %q, want those cut, %q", calls[0].Arguments, want)
	}
	if reply.Usage.Output != 4096 || reply.Usage.Reasoning != 4000 {
		t.Errorf("usage %+v, want 4096 output of which 4000 reasoning", reply.Usage)
	}
	if !wantRequests(t, f.received, 1) || t.Failed() {
		t.FailNow()
	}
}

func TestResponsesRetriesTransientFailures(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached for gpt-test","type":"requests","code":"rate_limit_exceeded"}}`, "Retry-After", "1"),
		status(500, `{"error":{"message":"The server had an error while processing your request.","type":"server_error"}}`),
		status(200, `{"status":"failed","error":{"code":"server_error","message":"The model failed to generate a response."},"output":[]}`),
		status(200, `{"id":"cut short`),
		status(200, responsesTextAnswer),
	}}
	m, events := newResponses(t, f)
	reply, err := m.Complete(context.Background(),
		model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
	wantReply(t, reply, err, "The root cause is the flagd ConfigMap.", f.received, 5)
	var retries []model.Event
	for _, e := range *events {
		if e.Kind == "retry" {
			retries = append(retries, e)
		}
	}
	if len(retries) != 4 {
		t.Fatalf("retries %+v, want 4", retries)
	}
	if retries[0].Wait != time.Second {
		t.Errorf("the first retry waits %v, want the Retry-After of 1s", retries[0].Wait)
	}
	textcheck.Has(t, "the first retry", retries[0].Error, "Rate limit reached")
	textcheck.Has(t, "the third retry", retries[2].Error, "The model failed to generate a response.")
	textcheck.Has(t, "the fourth retry", retries[3].Error, "not JSON")
	assertNoKey(t, *events)
}

func TestResponsesPermanentErrorsFailAtOnce(t *testing.T) {
	for _, c := range []struct {
		code int
		body string
		want string
	}{
		{401, `{"error":{"message":"Incorrect API key provided: sk-test-****-42.","type":"invalid_request_error","code":"invalid_api_key"}}`, "Incorrect API key provided"},
		{400, `{"error":{"message":"Unsupported parameter: 'reasoning.effort' is not supported with this model.","code":"unsupported_parameter"}}`, "Unsupported parameter"},
		{200, `{"status":"failed","error":{"code":"invalid_prompt","message":"Invalid prompt: flagged as potentially violating our usage policy."},"output":[]}`, "the response failed (invalid_prompt): Invalid prompt"},
		{200, `{"status":"failed","error":null,"output":[]}`, "HTTP 200: the response failed"},
	} {
		f := &fakeChat{answers: []func(http.ResponseWriter){status(c.code, c.body), status(200, responsesTextAnswer)}}
		m, events := newResponses(t, f)
		_, err := m.Complete(context.Background(),
			model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
		if apiErr, _ := wantAPIError(t, err, c.code, c.want); apiErr != nil && apiErr.Transient() {
			t.Errorf("HTTP %d: err %v is transient, want permanent", c.code, err)
		}
		wantRequests(t, f.received, 1)
		assertNoKey(t, *events)
	}
}

func TestResponsesContextOverflow(t *testing.T) {
	for _, answer := range []func(http.ResponseWriter){
		status(400, `{"error":{"message":"Your input exceeds the context window of this model. Please adjust your input and try again.","type":"invalid_request_error","param":"input","code":"context_length_exceeded"}}`),
		status(400, `{"error":{"message":"Input is 1210000 tokens.","code":"context_length_exceeded"}}`),
		status(200, `{"status":"failed","error":{"code":"context_length_exceeded","message":"Input is 1210000 tokens."},"output":[]}`),
	} {
		f := &fakeChat{answers: []func(http.ResponseWriter){answer, status(200, responsesTextAnswer)}}
		m, _ := newResponses(t, f)
		_, err := m.Complete(context.Background(),
			model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
		if !errors.Is(err, model.ErrContextOverflow) || len(f.received) != 1 {
			t.Errorf("err = %v after %d requests, want a context overflow at once", err, len(f.received))
		}
	}
}

func TestResponsesMalformedAnswers(t *testing.T) {
	f := &fakeChat{}
	for range 100 {
		f.answers = append(f.answers, status(200, `{"output": [{"type":"message"`))
	}
	m, _ := newResponses(t, f)
	m.Budget = 50 * time.Millisecond
	_, err := m.Complete(context.Background(),
		model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
	if !wantErr(t, err, errMalformed, []string{"gave up after", "gpt-test"}) {
		t.Fatalf("a body that is not JSON: err = %v", err)
	}

	f = &fakeChat{answers: []func(http.ResponseWriter){status(200, `{"id":"resp_3","status":"completed"}`)}}
	m, _ = newResponses(t, f)
	_, err = m.Complete(context.Background(),
		model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
	if !wantErr(t, err, errNoReply, []string{"no output"}) || !wantRequests(t, f.received, 1) {
		t.Fatalf("JSON with no output: err = %v after %d requests", err, len(f.received))
	}
}

// TestResponsesWithoutTools: a request with no tools (the judge's) carries neither tools nor
// tool_choice, as on the Chat path.
func TestResponsesWithoutTools(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, responsesTextAnswer)}}
	m, _ := newResponses(t, f)
	if _, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "map"}}}); err != nil {
		t.Fatal(err)
	}
	if sent := gjson.ParseBytes(f.received[0]); sent.Get("tools").Exists() || sent.Get("tool_choice").Exists() {
		t.Fatalf("request %s", f.received[0])
	}
}
