package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

const testKey = "sk-test-key-must-not-leak-42"

// fakeChat is a Chat Completions server that answers from a queue of canned responses and
// records what it received.
type fakeChat struct {
	path     string // default /v1/chat/completions
	headers  []http.Header
	mu       sync.Mutex
	answers  []func(w http.ResponseWriter)
	received [][]byte
	auth     []string
}

func (f *fakeChat) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.received = append(f.received, body)
	f.auth = append(f.auth, r.Header.Get("Authorization"))
	f.headers = append(f.headers, r.Header.Clone())
	var answer func(http.ResponseWriter)
	if len(f.answers) > 0 {
		answer, f.answers = f.answers[0], f.answers[1:]
	}
	f.mu.Unlock()
	want := f.path
	if want == "" {
		want = "/v1/chat/completions"
	}
	if r.URL.Path != want {
		http.NotFound(w, r)
		return
	}
	if answer == nil {
		http.Error(w, "no answer queued", http.StatusInternalServerError)
		return
	}
	answer(w)
}

func status(code int, body string, header ...string) func(http.ResponseWriter) {
	return func(w http.ResponseWriter) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

const toolAnswer = `{"id":"c1","choices":[{"index":0,"finish_reason":"tool_calls","message":{"role":"assistant","content":null,
 "reasoning_content":"I should look at the alerts.",
 "tool_calls":[{"id":"call_1","type":"function","function":{"name":"code_exec","arguments":"{\"cmd\": \"ls alerts\"}"}},
               {"id":"call_2","type":"function","function":{"name":"code_exec","arguments":"{not json"}}]}}],
 "usage":{"prompt_tokens":1200,"completion_tokens":80,"prompt_tokens_details":{"cached_tokens":1000},"completion_tokens_details":{"reasoning_tokens":50}}}`

// testOptions starts f on 127.0.0.1 and returns options that reach it under /v1 with short
// retry waits.
func testOptions(t *testing.T, f *fakeChat) Options {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return Options{Model: "gpt-test", BaseURL: srv.URL + "/v1", APIKey: testKey, MaxTokens: 4096, ReasoningEffort: "high",
		Retry: backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond, MaxRetryAfter: 2 * time.Second}}
}

// recording is ctx with a recorder that appends the call's wire events to events, as the
// runner's recorder does.
func recording(ctx context.Context, events *[]model.Event) context.Context {
	return model.WithRecorder(ctx, func(e model.Event) { *events = append(*events, e) })
}

// recordedChat is a Chat Completions provider whose calls are recorded.
type recordedChat struct {
	*OpenAIChat
	events *[]model.Event
}

func (r recordedChat) Complete(ctx context.Context, req model.Request) (model.Reply, error) {
	return r.OpenAIChat.Complete(recording(ctx, r.events), req)
}

func newChat(t *testing.T, f *fakeChat) (recordedChat, *[]model.Event) {
	var events []model.Event
	return recordedChat{&OpenAIChat{testOptions(t, f)}, &events}, &events
}

var conversation = model.Request{
	Messages: []model.Message{
		{Role: model.RoleSystem, Content: "system"},
		{Role: model.RoleUser, Content: "task"},
		{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "call_0", Name: "code_exec",
			Arguments: `{"cmd":"pwd"}`}},
			Opaque: json.RawMessage(`{"reasoning_content":"earlier thought"}`)},
		{Role: model.RoleTool, ToolCallID: "call_0", Content: "<shell_results>...</shell_results>"},
	},
	Tools: []model.Tool{{Name: "code_exec", Description: "run", Parameters: json.RawMessage(`{"type":"object"}`)}},
}

// TestChatRoundTrip: a call goes with its key, its answer reads as a reply (calls, reasoning to
// pass back, usage) and is recorded without the key; the request's shape is
// testdata/requests/chat-*.json's (TestGoldenRequests).
func TestChatRoundTrip(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}}
	m, events := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil {
		t.Fatal(err)
	}
	if f.auth[0] != "Bearer "+testKey {
		t.Errorf("Authorization = %q", f.auth[0])
	}
	calls := reply.Message.ToolCalls
	if want := []model.ToolCall{{ID: "call_1", Name: "code_exec", Arguments: `{"cmd": "ls alerts"}`}, {ID: "call_2", Name: "code_exec", Arguments: "{not json"}}; !slices.Equal(calls, want) {
		t.Fatalf("tool calls %+v, want %+v", calls, want)
	}
	if !strings.Contains(string(reply.Message.Opaque), "I should look at the alerts.") {
		t.Errorf("reasoning to pass back = %s", reply.Message.Opaque)
	}
	if want := (model.Usage{Input: 1200, Output: 80, CachedRead: 1000, Reasoning: 50}); reply.Usage != want {
		t.Errorf("usage %+v, want %+v", reply.Usage, want)
	}
	for _, e := range *events {
		if strings.Contains(string(e.Body), testKey) || strings.Contains(e.Error, testKey) {
			t.Fatalf("the key is in a recorded event: %+v", e)
		}
	}
	if got := eventKinds(*events); got != "request response" {
		t.Fatalf("events %s, want request response", got)
	}
}

// eventKinds are the kinds of events, in order.
func eventKinds(events []model.Event) string {
	var kinds []string
	for _, e := range events {
		kinds = append(kinds, string(e.Kind))
	}
	return strings.Join(kinds, " ")
}

// TestChatWithoutTools: a request with no tools (the judge's) carries neither tools nor
// tool_choice, which the API refuses on its own.
func TestChatWithoutTools(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, `{"choices":[{"message":{"content":"{}"}}]}`)}}
	m, _ := newChat(t, f)
	req := model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "judge"},
		{Role: model.RoleUser, Content: "map"}}}
	if _, err := m.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	sent := gjson.ParseBytes(f.received[0])
	for _, field := range []string{"tools", "tool_choice"} {
		if sent.Get(field).Exists() {
			t.Errorf("the request has %s: %s", field, f.received[0])
		}
	}
	if got := sent.Get("messages.1.content").String(); got != "map" {
		t.Errorf("the user's message %q, want map", got)
	}
}

func TestChatRetriesTransientFailures(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached"}}`, "Retry-After", "1"),
		status(500, `{"error":{"message":"server error"}}`),
		status(529, `{"error":{"message":"overloaded"}}`),
		status(200, `{"id":"cut short`), // JSON cut short: an HTML page is permanent (TestPermanentRefusals)
		status(200, `{"choices":[{"message":{"content":"fine"}}],"usage":{}}`),
	}}
	m, events := newChat(t, f)
	began := time.Now()
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil || reply.Message.Content != "fine" {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	if len(f.received) != 5 || time.Since(began) < time.Second {
		t.Fatalf("%d attempts in %v; Retry-After: 1 must be honoured", len(f.received), time.Since(began))
	}
	retries := 0
	for _, e := range *events {
		if e.Kind == "retry" {
			retries++
		}
	}
	if retries != 4 {
		t.Fatalf("%d retries recorded", retries)
	}
	for i, body := range f.received[1:] { // as the reference client's SDK retries
		if !bytes.Equal(body, f.received[0]) {
			t.Errorf("attempt %d sent %s, not the first attempt's body", i+2, body)
		}
	}
}

func TestChatPermanentErrorsFailAtOnce(t *testing.T) {
	for _, c := range []struct {
		code int
		body string
		want string
	}{
		{401, `{"error":{"message":"Incorrect API key provided"}}`, "Incorrect API key provided"},
		{404, `{"error":{"message":"The model gpt-test does not exist"}}`, "does not exist"},
		{400, `{"error":{"message":"Invalid schema for function"}}`, "Invalid schema"},
	} {
		f := &fakeChat{answers: []func(http.ResponseWriter){status(c.code, c.body), status(200, toolAnswer)}}
		m, _ := newChat(t, f)
		_, err := m.Complete(context.Background(), conversation)
		wantAPIError(t, err, c.code, c.want)
		wantRequests(t, f.received, 1)
	}
}

func TestChatContextOverflow(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(400,
		`{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","code":"context_length_exceeded"}}`)}}
	m, _ := newChat(t, f)
	if _, err := m.Complete(context.Background(), conversation); !errors.Is(err, model.ErrContextOverflow) {
		t.Fatalf("err = %v", err)
	}
}

func TestChatGivesUpWithinBudget(t *testing.T) {
	f := &fakeChat{}
	for range 100 {
		f.answers = append(f.answers, status(503, `{"error":{"message":"unavailable"}}`))
	}
	m, _ := newChat(t, f)
	m.Budget = 50 * time.Millisecond
	_, err := m.Complete(context.Background(), conversation)
	if !wantErr(t, err, nil, []string{"gave up after", "unavailable"}) {
		t.FailNow()
	}
}

// cut answers with a body cut short, then drops the connection.
func cut(w http.ResponseWriter) {
	w.Header().Set("Content-Length", "1000")
	w.WriteHeader(200)
	io.WriteString(w, `{"choices":[{"mess`)
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// reset drops the connection before any answer.
func reset(w http.ResponseWriter) {
	if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
		conn.Close()
	}
}

// stall answers nothing for a second.
func stall(http.ResponseWriter) { time.Sleep(time.Second) }

func TestChatRetriesAnAttemptThatTimesOut(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){stall, status(200, `{"choices":[{"message":{"content":"ok"}}]}`)}}
	m, events := newChat(t, f)
	m.AttemptTimeout = 100 * time.Millisecond
	reply, err := m.Complete(context.Background(), conversation)
	wantReply(t, reply, err, "ok", f.received, 2)
	retried := false
	for _, e := range *events {
		retried = retried || (e.Kind == "retry" && strings.Contains(e.Error, "deadline exceeded"))
	}
	if !retried {
		t.Fatalf("no retry recorded for the timed-out attempt: %+v", *events)
	}
}

func TestChatRetriesCutAndResetConnections(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){cut, reset, status(200, `{"choices":[{"message":{"content":"ok"}}]}`)}}
	m, _ := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	wantReply(t, reply, err, "ok", f.received, 3)
}

// TestChatErrorsInsideA200: an error a provider reports inside a 200 answer (OpenRouter's
// error object once the model started, a choice that finished with "error") is retried or
// not as the status it carries, and the messages quote the provider; valid JSON holding no
// reply is not called "not JSON".
func TestChatErrorsInsideA200(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(200, `{"error":{"code":502,"message":"Provider returned error","metadata":{"raw":"upstream connect error","provider_name":"Google"}},"user_id":"user_2x"}`),
		status(200, `{"id":"gen-1","provider":"Google","model":"google/gemini-3.1-pro-preview","object":"chat.completion","created":1767225600,
 "choices":[{"logprobs":null,"finish_reason":"error","native_finish_reason":"error","index":0,
  "message":{"role":"assistant","content":"","refusal":null,"reasoning":null},
  "error":{"code":429,"message":"Rate limit exceeded upstream","metadata":{"provider_name":"Google"}}}],
 "usage":{"prompt_tokens":10,"completion_tokens":0,"total_tokens":10}}`),
		status(200, `{"id":"gen-2","object":"chat.completion","choices":[{"index":0,"finish_reason":"error","message":{"role":"assistant","content":""}}]}`),
		status(200, toolAnswer),
	}}
	m, events := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil {
		t.Fatalf("the call failed after %d requests: %v", len(f.received), err)
	}
	if len(reply.Message.ToolCalls) != 2 {
		t.Errorf("%d tool calls, want 2: %+v", len(reply.Message.ToolCalls), reply.Message)
	}
	if !wantRequests(t, f.received, 4) || t.Failed() {
		t.FailNow()
	}
	var retries []string
	for _, e := range *events {
		if e.Kind == "retry" {
			retries = append(retries, e.Error)
		}
	}
	if len(retries) != 3 {
		t.Fatalf("retries %q, want 3", retries)
	}
	textcheck.Has(t, "the first retry", retries[0], "502", "Provider returned error")
	textcheck.Has(t, "the second retry", retries[1], "429", "Rate limit exceeded upstream")
	textcheck.Has(t, "the third retry", retries[2], "error")
	for _, c := range []struct{ body, want string }{
		{`{"error":{"code":403,"message":"Input flagged by moderation","metadata":{"reasons":["violence"]}}}`, "Input flagged by moderation"},
		{`{"id":"gen-3","object":"chat.completion","choices":[]}`, "no choices"},
	} {
		f := &fakeChat{answers: []func(http.ResponseWriter){status(200, c.body), status(200, toolAnswer)}}
		m, _ := newChat(t, f)
		_, err := m.Complete(context.Background(), conversation)
		if !wantErr(t, err, nil, []string{c.want}, "not JSON") {
			t.Logf("the answer: %s", c.body)
		}
		wantRequests(t, f.received, 1)
	}
}

// TestRetryAfterMilliseconds: retry-after-ms, which both official SDKs read first, is
// honoured ahead of Retry-After's whole seconds.
func TestRetryAfterMilliseconds(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(429, `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`, "retry-after-ms", "200", "Retry-After", "1"),
		status(503, `{"error":{"message":"Slow down"}}`, "retry-after-ms", "150.5"),
		status(200, toolAnswer),
	}}
	m, events := newChat(t, f)
	if _, err := m.Complete(context.Background(), conversation); err != nil {
		t.Fatal(err)
	}
	var waits []time.Duration
	for _, e := range *events {
		if e.Kind == "retry" {
			waits = append(waits, e.Wait)
		}
	}
	if want := []time.Duration{200 * time.Millisecond, 150500 * time.Microsecond}; !slices.Equal(waits, want) {
		t.Fatalf("waits %v, want %v", waits, want)
	}
}

// TestChatKeepsARefusal: a refusal (content null, refusal set) is the reply's text, and goes
// back in the history as such, as the Responses path does.
func TestChatKeepsARefusal(t *testing.T) {
	const refusal = "I can't help with that request."
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(200, `{"id":"c2","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop",
 "message":{"role":"assistant","content":null,"refusal":"`+refusal+`","annotations":[]}}],
 "usage":{"prompt_tokens":30,"completion_tokens":8,"total_tokens":38}}`),
		status(200, toolAnswer),
	}}
	m, _ := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil || reply.Message.Content != refusal {
		t.Fatalf("reply %+v, err %v", reply.Message, err)
	}
	next := conversation
	next.Messages = append(append([]model.Message(nil), conversation.Messages...), reply.Message, model.Message{Role: model.RoleUser, Content: "Continue."})
	if _, err := m.Complete(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	if got := gjson.GetBytes(f.received[1], "messages.4.content").String(); got != refusal {
		t.Fatalf("the refusal went back as %q", got)
	}
}

// TestUsageDetails: reasoning and cache-write counts are read where a provider reports them
// (OpenRouter: prompt_tokens_details.cache_write_tokens; Anthropic:
// output_tokens_details.thinking_tokens).
func TestUsageDetails(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, `{"id":"gen-4","object":"chat.completion",
 "choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}],
 "usage":{"prompt_tokens":194,"completion_tokens":20,"total_tokens":214,"cost":0.95,
  "prompt_tokens_details":{"cached_tokens":50,"cache_write_tokens":100,"audio_tokens":0},"completion_tokens_details":{"reasoning_tokens":12}}}`)}}
	m, _ := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil ||
		reply.Usage != (model.Usage{Input: 194, CachedRead: 50, CachedWrite: 100, Output: 20, Reasoning: 12}) {
		t.Fatalf("usage %+v, err %v", reply.Usage, err)
	}
	api := newAnthropicAPI(status(200, `{"id":"msg_y","type":"message","role":"assistant","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn",
 "usage":{"input_tokens":10,"cache_creation_input_tokens":300,"cache_read_input_tokens":2000,"cache_creation":{"ephemeral_5m_input_tokens":300,"ephemeral_1h_input_tokens":0},
  "output_tokens":500,"output_tokens_details":{"thinking_tokens":420}}}`))
	reply, err = newAnthropic(t, api).Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}})
	if err != nil ||
		reply.Usage != (model.Usage{Input: 2310, CachedRead: 2000, CachedWrite: 300, Output: 500, Reasoning: 420}) {
		t.Fatalf("usage %+v, err %v", reply.Usage, err)
	}
}

// TestReplyWithoutUsageIsMarked: an answer that reports no usage leaves a mark in the
// trajectory (its tokens are unknown, not zero).
func TestReplyWithoutUsageIsMarked(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){
		status(200, `{"id":"c3","object":"chat.completion","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"done"}}]}`),
		status(200, toolAnswer),
	}}
	m, events := newChat(t, f)
	for range 2 {
		if _, err := m.Complete(context.Background(), conversation); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []string
	for _, e := range *events {
		kinds = append(kinds, string(e.Kind))
	}
	if got := strings.Join(kinds, " "); got != "request response no_usage request response" || !strings.Contains((*events)[2].Error, "usage") {
		t.Fatalf("events %s", got)
	}
}

// TestRecordedRequestHeader: the recorded request carries the headers sent, Content-Type
// included, the key redacted.
func TestRecordedRequestHeader(t *testing.T) {
	f := &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}}
	m, events := newChat(t, f)
	if _, err := m.Complete(context.Background(), conversation); err != nil {
		t.Fatal(err)
	}
	h := (*events)[0].Header
	if got := h["Content-Type"]; got != "application/json" {
		t.Errorf("recorded Content-Type %q, want application/json: %v", got, h)
	}
	if got := h["Authorization"]; got != redacted {
		t.Errorf("recorded Authorization %q, want %q", got, redacted)
	}
	if got := f.headers[0].Get("Content-Type"); got != "application/json" {
		t.Errorf("sent Content-Type %q, want application/json", got)
	}
}

// TestAnswerOverTheCap: an answer larger than the cap is refused at once, naming the cap,
// and is not recorded whole.
func TestAnswerOverTheCap(t *testing.T) {
	huge := func(w http.ResponseWriter) {
		w.WriteHeader(200)
		io.WriteString(w, `{"choices":[{"message":{"content":"`)
		io.WriteString(w, strings.Repeat("x", MaxResponseBytes))
		io.WriteString(w, `"}}]}`)
	}
	f := &fakeChat{answers: []func(http.ResponseWriter){huge, status(200, toolAnswer)}}
	m, events := newChat(t, f)
	_, err := m.Complete(context.Background(), conversation)
	if !wantErr(t, err, nil, []string{"32 MiB"}, "not JSON") || !wantRequests(t, f.received, 1) {
		t.FailNow()
	}
	for _, e := range *events {
		if len(e.Body) > 1<<20 {
			t.Fatalf("a %d-byte %s event recorded", len(e.Body), e.Kind)
		}
	}
}
