package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

// The run's key, a canary that must reach the provider and nothing else; the episode's token;
// the run's model.
const (
	canary   = "sk-canary-7c1e9a4f3b2d"
	token    = "episode-token-5d8e2a61c0f4"
	runModel = "run-model-1"
)

var protocols = []gateway.Protocol{gateway.Chat, gateway.Responses, gateway.Messages}

// The fake provider's answers: 11 tokens in, 7 out, whichever the protocol.
var plainAnswers = map[gateway.Protocol]string{
	gateway.Chat: `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"run-model-1","choices":[{"index":0,` +
		`"message":{"role":"assistant","content":"Hello"},"finish_reason":"stop"}],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}`,
	gateway.Responses: `{"id":"resp_1","object":"response","status":"completed","model":"run-model-1","output":[{"type":"message","id":"msg_1",` +
		`"role":"assistant","content":[{"type":"output_text","text":"Hello"}]}],"usage":{"input_tokens":11,"output_tokens":7,"total_tokens":18}}`,
	gateway.Messages: `{"id":"msg_1","type":"message","role":"assistant","model":"run-model-1","content":[{"type":"text","text":"Hello"}],` +
		`"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":11,"output_tokens":7}}`,
	gateway.Gemini: geminiPlain,
}

// streamEvents are the events of a streamed answer, as each API sends them.
var streamEvents = map[gateway.Protocol][]string{
	gateway.Chat: {
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"run-model-1","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"run-model-1","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}],"usage":null}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"run-model-1","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"run-model-1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}}` + "\n\n",
		"data: [DONE]\n\n",
	},
	gateway.Responses: {
		"event: response.created\n" + `data: {"type":"response.created","sequence_number":0,"response":{"id":"resp_1","object":"response","status":"in_progress","model":"run-model-1","output":[],"usage":null}}` + "\n\n",
		"event: response.output_text.delta\n" + `data: {"type":"response.output_text.delta","sequence_number":1,"item_id":"msg_1","output_index":0,"content_index":0,"delta":"Hello"}` + "\n\n",
		"event: response.completed\n" + `data: {"type":"response.completed","sequence_number":2,"response":{"id":"resp_1","object":"response","status":"completed","model":"run-model-1",` +
			`"output":[{"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"Hello"}]}],"usage":{"input_tokens":11,"output_tokens":7,"total_tokens":18}}}` + "\n\n",
	},
	gateway.Messages: {
		"event: message_start\n" + `data: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"run-model-1","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":11,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}` + "\n\n",
		"event: content_block_start\n" + `data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}` + "\n\n",
		"event: ping\n" + `data: {"type": "ping"}` + "\n\n",
		"event: content_block_delta\n" + `data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}` + "\n\n",
		"event: content_block_stop\n" + `data: {"type":"content_block_stop","index":0}` + "\n\n",
		"event: message_delta\n" + `data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":7}}` + "\n\n",
		"event: message_stop\n" + `data: {"type":"message_stop"}` + "\n\n",
	},
}

// requestBody is an agent's call in protocol p.
func requestBody(p gateway.Protocol, modelName string, stream bool) string {
	switch p {
	case gateway.Chat:
		return `{"model":"` + modelName + `","messages":[{"role":"user","content":"Hi"}],"stream":` + boolText(stream) + `}`
	case gateway.Responses:
		return `{"model":"` + modelName + `","input":"Hi","stream":` + boolText(stream) + `}`
	}
	return `{"model":"` + modelName + `","max_tokens":100,"messages":[{"role":"user","content":"Hi"}],"stream":` + boolText(stream) + `}`
}

func boolText(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// answer is how the fake provider answers one request.
type answer func(w http.ResponseWriter, r *http.Request)

// fakeProvider is a fake of the run's provider on 127.0.0.1, speaking protocol: it answers with
// the answers queued, in order, then as the API does (plainAnswers, streamEvents), and keeps
// what it was sent.
type fakeProvider struct {
	protocol gateway.Protocol
	srv      *httptest.Server

	mu      sync.Mutex
	queued  []answer
	headers []http.Header
	bodies  []string
	paths   []string
	uris    []string // the paths with their queries
}

func newProvider(t testing.TB, p gateway.Protocol, queued ...answer) *fakeProvider {
	f := &fakeProvider{protocol: p, queued: queued}
	f.srv = httptest.NewServer(f)
	t.Cleanup(f.srv.Close)
	return f
}

// baseURL is the provider's API root as provider.Options has it.
func (f *fakeProvider) baseURL() string {
	if f.protocol == gateway.Messages || f.protocol == gateway.Gemini {
		return f.srv.URL
	}
	return f.srv.URL + "/v1"
}

func (f *fakeProvider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.headers, f.bodies, f.paths = append(f.headers, r.Header.Clone()), append(f.bodies, string(body)), append(f.paths, r.URL.Path)
	f.uris = append(f.uris, r.URL.RequestURI())
	var next answer
	if len(f.queued) > 0 {
		next, f.queued = f.queued[0], f.queued[1:]
	}
	f.mu.Unlock()
	if next == nil {
		next = f.reply(strings.Contains(string(body), `"stream":true`))
	}
	next(w, r)
}

// reply is the API's answer: plain, or streamed.
func (f *fakeProvider) reply(stream bool) answer {
	if stream {
		return streamed(streamEvents[f.protocol], nil)
	}
	return status(http.StatusOK, plainAnswers[f.protocol])
}

// queue adds answers to give before the API's own.
func (f *fakeProvider) queue(answers ...answer) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.queued = append(f.queued, answers...)
}

// calls is how many requests the provider got.
func (f *fakeProvider) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.bodies)
}

func (f *fakeProvider) sent(i int) (http.Header, string, string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.headers[i], f.bodies[i], f.paths[i]
}

// uri is the path and query of the i-th request the provider got.
func (f *fakeProvider) uri(i int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.uris[i]
}

// status answers with a status and a JSON body, and headers given as name, value pairs.
func status(code int, body string, header ...string) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// streamed sends events, each flushed; after the first, it waits for hold to close, when
// given.
func streamed(events []string, hold <-chan struct{}) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
		w.WriteHeader(http.StatusOK)
		for i, ev := range events {
			io.WriteString(w, ev)
			http.NewResponseController(w).Flush()
			if i == 0 && hold != nil {
				select {
				case <-hold:
				case <-r.Context().Done():
					return
				}
			}
		}
	}
}

// cut sends the status and the first n events of a stream, then cuts the connection.
func cut(events []string, n int) answer {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		for _, ev := range events[:n] {
			io.WriteString(w, ev)
		}
		http.NewResponseController(w).Flush()
		panic(http.ErrAbortHandler)
	}
}

// episode is a gateway on 127.0.0.1 in front of a provider, with what it recorded.
type episode struct {
	gw     *gateway.Gateway
	srv    *httptest.Server
	mu     sync.Mutex
	events []model.Event
	capped []error
}

// fastRetry retries at once, so that tests of retries wait for nothing.
var fastRetry = backoff.Policy{Base: time.Microsecond, Max: time.Microsecond, MaxRetryAfter: time.Millisecond}

// newEpisode serves a gateway to f; change adjusts its configuration first.
func newEpisode(t testing.TB, f *fakeProvider, change func(*gateway.Config)) *episode {
	e := &episode{}
	cfg := gateway.Config{Token: token, Model: runModel, Retry: fastRetry,
		Upstream: gateway.Upstream{Protocol: f.protocol, BaseURL: f.baseURL(), APIKey: canary},
		Record: func(ev model.Event) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.events = append(e.events, ev)
		},
		Capped: func(err error) {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.capped = append(e.capped, err)
		},
	}
	if change != nil {
		change(&cfg)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.gw, e.srv = gw, httptest.NewServer(gw)
	t.Cleanup(e.srv.Close)
	return e
}

// recorded is what the gateway recorded so far.
func (e *episode) recorded() []model.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]model.Event(nil), e.events...)
}

// told is what the episode was told of its caps.
func (e *episode) told() []error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]error(nil), e.capped...)
}

// request is an agent's request to the gateway at path, with the episode's token the way
// the protocol's clients send it.
func (e *episode) request(t testing.TB, p gateway.Protocol, path, body string) *http.Request {
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if p == gateway.Messages {
		req.Header.Set("x-api-key", token)
		req.Header.Set("anthropic-version", "2023-06-01")
	} else {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	return req
}

// do sends req and reads the whole answer; err is what cut it, if anything.
func do(t testing.TB, req *http.Request) (resp *http.Response, body string, err error) {
	t.Helper()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, string(b), err
}

// call makes the agent's call in protocol p and reads the whole answer, which must come.
func (e *episode) call(t testing.TB, p gateway.Protocol, modelName string, stream bool) (*http.Response, string) {
	t.Helper()
	resp, body, err := do(t, e.request(t, p, p.Path(), requestBody(p, modelName, stream)))
	if err != nil {
		t.Fatalf("reading the answer: %v", err)
	}
	return resp, body
}

// firstEvent reads a stream's first event.
func firstEvent(r *bufio.Reader) (string, error) {
	var ev bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		ev.WriteString(line)
		if err != nil {
			return ev.String(), err
		}
		if line == "\n" {
			return ev.String(), nil
		}
	}
}

// errorOf reads an error answer in protocol p's shape: its type (Anthropic) or code (OpenAI),
// and its message; it fails the test when the answer is not in that shape.
func errorOf(t testing.TB, p gateway.Protocol, body string) (kind, message string) {
	t.Helper()
	var v struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("error answer %q: %v", body, err)
	}
	if p == gateway.Messages {
		if v.Type != "error" || v.Error.Type == "" {
			t.Fatalf("not an Anthropic error: %s", body)
		}
		return v.Error.Type, v.Error.Message
	}
	if v.Error.Code == "" || v.Error.Type == "" {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	return v.Error.Code, v.Error.Message
}

// wantError checks an error the gateway answered: its status, its kind (Anthropic's type,
// OpenAI's code) one of kinds, its message holding inMessage; what names the call.
func wantError(t testing.TB, what string, p gateway.Protocol, resp *http.Response, body string, status int, kinds []string, inMessage string) {
	t.Helper()
	kind, message := errorOf(t, p, body)
	if resp.StatusCode != status {
		t.Errorf("%s: status %d, want %d: %s", what, resp.StatusCode, status, body)
	}
	if !slices.Contains(kinds, kind) {
		t.Errorf("%s: error %q, want one of %q", what, kind, kinds)
	}
	if !strings.Contains(message, inMessage) {
		t.Errorf("%s: message %q lacks %q", what, message, inMessage)
	}
}

// wantAnswer checks that the agent read the status and body the provider sent.
func wantAnswer(t testing.TB, resp *http.Response, body string, status int, want string) {
	t.Helper()
	if resp.StatusCode != status {
		t.Errorf("status %d, want %d", resp.StatusCode, status)
	}
	if body != want {
		t.Errorf("the agent read\n%s\nwant\n%s", body, want)
	}
}

// wantTotals checks a gateway's count of calls passed on and of their input and output tokens.
func wantTotals(t testing.TB, tot gateway.Totals, calls int, input, output int64) {
	t.Helper()
	if tot.Calls != calls {
		t.Errorf("totals of %d calls, want %d: %+v", tot.Calls, calls, tot)
	}
	if tot.Usage.Input != input || tot.Usage.Output != output {
		t.Errorf("totals of %d input and %d output tokens, want %d and %d", tot.Usage.Input, tot.Usage.Output, input, output)
	}
}

// kindsOf is the kinds of events, in order.
func kindsOf(events []model.Event) []model.EventKind {
	var kinds []model.EventKind
	for _, ev := range events {
		kinds = append(kinds, ev.Kind)
	}
	return kinds
}

// withTimeout bounds a wait that only a broken gateway makes endless, so that the test fails
// naming it instead of hanging until go test's own timeout.
func withTimeout(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	select {
	case <-done:
	case <-ctx.Done():
		t.Fatalf("%s never happened", what)
	}
}
