package gateway_test

import (
	"bufio"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// The Gemini API's answers, plain and streamed: 11 tokens in, 7 out, as the others'.
const geminiPlain = `{"candidates":[{"content":{"role":"model","parts":[{"text":"Hello"}]},"finishReason":"STOP","index":0}],` +
	`"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2,"totalTokenCount":18},"modelVersion":"run-model-1"}`

var geminiEvents = []string{
	`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]},"index":0}],"usageMetadata":{"promptTokenCount":11},"modelVersion":"run-model-1"}` + "\r\n\r\n",
	`data: {"candidates":[{"content":{"role":"model","parts":[{"text":"lo"}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":11,"candidatesTokenCount":5,"thoughtsTokenCount":2,"totalTokenCount":18},"modelVersion":"run-model-1"}` + "\r\n\r\n",
}

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"temperature":0}}`

// geminiRequest is an agent's Gemini call at path (and query), with the token in the header
// Google's SDK uses.
func (e *episode) geminiRequest(t testing.TB, method, pathAndQuery, body string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, e.srv.URL+pathAndQuery, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("x-goog-api-key", token)
	return req
}

// geminiError reads an error answer in Google's shape; it fails the test when it is not.
func geminiError(t testing.TB, body string) (code int, status, message string) {
	t.Helper()
	e := gjson.Get(body, "error")
	for _, field := range []string{"code", "status", "message"} {
		if !e.Get(field).Exists() {
			t.Fatalf("not a Google error, no error.%s: %s", field, body)
		}
	}
	return int(e.Get("code").Int()), e.Get("status").String(), e.Get("message").String()
}

// geminiTurns keeps the turns a gateway tells.
type geminiTurns struct {
	mu   sync.Mutex
	seen []model.Reply
	reqs []model.Request
	errs []error
}

func (tt *geminiTurns) turn(_ int, req model.Request, reply model.Reply, err error) {
	tt.mu.Lock()
	defer tt.mu.Unlock()
	tt.reqs, tt.seen, tt.errs = append(tt.reqs, req), append(tt.seen, reply), append(tt.errs, err)
}

// TestGeminiPassesCallsOn: generateContent and streamGenerateContent?alt=sse reach the
// provider (at the run's model's path with the run's key in x-goog-api-key, as
// TestForwardedRequests shows), the token (sent as a header or as ?key=) not in the
// trajectory; the answers come
// back as sent, their usageMetadata counted, each call a turn.
func TestGeminiPassesCallsOn(t *testing.T) {
	for _, c := range []struct {
		name, method, query string
		answer              answer
		want                string
	}{
		{"plain, token in the header", "generateContent", "", status(http.StatusOK, geminiPlain), geminiPlain},
		{"streamed, token in the query", "streamGenerateContent", "?alt=sse&key=" + token, streamed(geminiEvents, nil), strings.Join(geminiEvents, "")},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, gateway.Gemini, c.answer)
			var tt geminiTurns
			e := newEpisode(t, f, func(cfg *gateway.Config) {
				cfg.Prices = &model.Prices{Input: 1, Output: 2}
				cfg.Turn = tt.turn
			})
			req := e.geminiRequest(t, http.MethodPost, "/v1beta/models/"+runModel+":"+c.method+c.query, geminiBody)
			if c.query != "" {
				req.Header.Del("x-goog-api-key")
			}
			resp, body, err := do(t, req)
			if err != nil {
				t.Fatalf("reading the answer: %v", err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			if body != c.want {
				t.Errorf("answer %q, want the provider's %q", body, c.want)
			}
			events := e.recorded()
			if len(events) != 2 {
				t.Fatalf("recorded %+v, want the request and its answer", events)
			}
			if u := events[0].URL; strings.Contains(u, token) || strings.Contains(u, "key=") {
				t.Errorf("the recorded URL %s holds the token", u)
			}
			if c.query != "" && !strings.HasSuffix(events[0].URL, "?alt=sse") {
				t.Errorf("the provider was called at %s, want ?alt=sse kept", events[0].URL)
			}
			type counted struct {
				calls int
				usage model.Usage
				cost  float64
			}
			tot := e.gw.Totals()
			if got, want := (counted{tot.Calls, tot.Usage, *tot.CostUSD}), (counted{1, model.Usage{Input: 11, Output: 7, Reasoning: 2}, 25e-6}); got != want {
				t.Errorf("totals %+v, want %+v", got, want)
			}
			tt.mu.Lock()
			defer tt.mu.Unlock()
			if len(tt.seen) != 1 {
				t.Fatalf("%d turns, want 1", len(tt.seen))
			}
			if tt.errs[0] != nil {
				t.Errorf("the turn failed: %v", tt.errs[0])
			}
			if got := tt.seen[0].Message.Content; got != "Hello" {
				t.Errorf("the turn's reply %q, want Hello", got)
			}
			if got := tt.reqs[0].Messages[0].Content; got != "Hi" {
				t.Errorf("the turn's request %q, want Hi", got)
			}
		})
	}
}

// TestGeminiStreamsAsItComes: a streamed call's first event reaches the agent while the
// provider holds the rest back.
func TestGeminiStreamsAsItComes(t *testing.T) {
	hold := make(chan struct{})
	f := newProvider(t, gateway.Gemini, streamed(geminiEvents, hold))
	e := newEpisode(t, f, nil)
	resp, err := http.DefaultClient.Do(e.geminiRequest(t, http.MethodPost, "/v1beta/models/"+runModel+":streamGenerateContent?alt=sse", geminiBody))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first, err := bufio.NewReader(resp.Body).ReadString('\n')
	close(hold)
	if err != nil || !strings.Contains(first, `"Hel"`) {
		t.Errorf("first line %q, %v", first, err)
	}
}

// TestGeminiRefusals: what the gateway answers itself on a Gemini run, in Google's error
// shape, with nothing sent to the provider.
func TestGeminiRefusals(t *testing.T) {
	models := "/v1beta/models/"
	for _, c := range []struct {
		name, method, path, body string
		auth                     func(*http.Request)
		code                     int
		status, says             string
	}{
		{"no token", http.MethodPost, models + runModel + ":generateContent", geminiBody, func(r *http.Request) { r.Header.Del("x-goog-api-key") },
			401, "UNAUTHENTICATED", "episode's token"},
		{"another token", http.MethodPost, models + runModel + ":generateContent", geminiBody, func(r *http.Request) { r.Header.Set("x-goog-api-key", "nope-nope-nope-nope") },
			401, "UNAUTHENTICATED", "episode's token"},
		{"another token in the query", http.MethodPost, models + runModel + ":generateContent?key=nope-nope-nope-nope", geminiBody, func(r *http.Request) { r.Header.Del("x-goog-api-key") },
			401, "UNAUTHENTICATED", "episode's token"},
		{"another model", http.MethodPost, models + "gemini-other:generateContent", geminiBody, nil, 404, "NOT_FOUND", `allows "` + runModel + `" only`},
		{"another method", http.MethodPost, models + runModel + ":embedContent", geminiBody, nil, 404, "NOT_FOUND", ":generateContent"},
		{"another protocol's path", http.MethodPost, "/v1/chat/completions", `{"model":"` + runModel + `"}`, nil, 404, "", "speaks Google Gemini"},
		{"another version", http.MethodPost, "/v1/models/" + runModel + ":generateContent", geminiBody, nil, 404, "NOT_FOUND", "/v1beta/models/MODEL:generateContent"},
		{"GET", http.MethodGet, models + runModel + ":generateContent", "", nil, 405, "INVALID_ARGUMENT", "takes POST"},
		{"not JSON", http.MethodPost, models + runModel + ":generateContent", `{"contents":`, nil, 400, "INVALID_ARGUMENT", "every JSON parser reads alike"},
		{"a stream not as SSE", http.MethodPost, models + runModel + ":streamGenerateContent", geminiBody, nil, 400, "INVALID_ARGUMENT", "alt=sse"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, gateway.Gemini)
			e := newEpisode(t, f, nil)
			req := e.geminiRequest(t, c.method, c.path, c.body)
			if c.auth != nil {
				c.auth(req)
			}
			resp, body, _ := do(t, req)
			if resp.StatusCode != c.code {
				t.Errorf("status %d, want %d: %s", resp.StatusCode, c.code, body)
			}
			if c.status == "" { // another protocol's path: that protocol's shape
				if _, message := errorOf(t, gateway.Chat, body); !strings.Contains(message, c.says) {
					t.Errorf("message %q, want it to say %q", message, c.says)
				}
			} else {
				code, st, message := geminiError(t, body)
				if code != c.code || st != c.status {
					t.Errorf("error %d %s, want %d %s", code, st, c.code, c.status)
				}
				if !strings.Contains(message, c.says) {
					t.Errorf("message %q, want it to say %q", message, c.says)
				}
			}
			if f.calls() != 0 {
				t.Errorf("the provider got %d calls", f.calls())
			}
			for _, ev := range e.recorded() {
				if strings.Contains(fmt.Sprint(ev), "nope-nope") {
					t.Errorf("a token is recorded: %+v", ev)
				}
			}
		})
	}
}

// TestGeminiMappedModelsCountsAndCaps: a background model mapped to the run's goes to the run's
// model's path; a token count is passed on and counts as no call; a call past the cap is a 400
// the agent's client takes as final; a provider's 429 is retried and its 400 passed back.
func TestGeminiMappedModelsCountsAndCaps(t *testing.T) {
	rateLimited := `{"error":{"code":429,"message":"Resource has been exhausted","status":"RESOURCE_EXHAUSTED"}}`
	invalid := `{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}`
	f := newProvider(t, gateway.Gemini, status(http.StatusOK, `{"totalTokens":3}`), status(http.StatusTooManyRequests, rateLimited),
		status(http.StatusOK, geminiPlain), status(http.StatusBadRequest, invalid))
	e := newEpisode(t, f, func(cfg *gateway.Config) {
		cfg.Mapped = []string{"gemini-*-flash-lite*"}
		cfg.Caps.Calls = 2
	})
	models := "/v1beta/models/"
	if resp, body, _ := do(t, e.geminiRequest(t, http.MethodPost, models+"gemini-2.5-flash-lite:countTokens", geminiBody)); resp.StatusCode != http.StatusOK || body != `{"totalTokens":3}` {
		t.Errorf("countTokens: %d %s", resp.StatusCode, body)
	}
	if resp, body, _ := do(t, e.geminiRequest(t, http.MethodPost, models+"gemini-2.5-flash-lite:generateContent", geminiBody)); resp.StatusCode != http.StatusOK || body != geminiPlain {
		t.Errorf("a mapped model's call after a 429: %d %s", resp.StatusCode, body)
	}
	if resp, body, _ := do(t, e.geminiRequest(t, http.MethodPost, models+runModel+":generateContent", geminiBody)); resp.StatusCode != http.StatusBadRequest || body != invalid {
		t.Errorf("the provider's 400: %d %s", resp.StatusCode, body)
	}
	resp, body, _ := do(t, e.geminiRequest(t, http.MethodPost, models+runModel+":generateContent", geminiBody))
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("past the cap: status %d, want 400", resp.StatusCode)
	}
	code, st, message := geminiError(t, body)
	if code != http.StatusBadRequest || st != "FAILED_PRECONDITION" {
		t.Errorf("past the cap: error %d %s, want 400 FAILED_PRECONDITION", code, st)
	}
	if !strings.Contains(message, "cap") {
		t.Errorf("past the cap: message %q says not why", message)
	}
	for i, want := range []string{":countTokens", ":generateContent", ":generateContent", ":generateContent"} {
		if _, _, path := f.sent(i); path != models+runModel+want {
			t.Errorf("call %d went to %s", i, path)
		}
	}
	type counted struct{ calls, retries, refused int }
	tot := e.gw.Totals()
	if got, want := (counted{tot.Calls, tot.Retries, tot.Refused}), (counted{2, 1, 1}); got != want {
		t.Errorf("totals %+v, want %+v", got, want)
	}
}

// TestUpstreamOfGemini: a google/ model is called over Gemini, which no other agent speaks.
func TestUpstreamOfGemini(t *testing.T) {
	m := &provider.Gemini{Options: provider.Options{BaseURL: "https://generativelanguage.googleapis.com",
		APIKey: "k4", Model: "gemini-x"}}
	up, name, err := gateway.UpstreamOf(m, []gateway.Protocol{gateway.Gemini})
	if err != nil {
		t.Fatal(err)
	}
	if want := (gateway.Upstream{Protocol: gateway.Gemini, BaseURL: "https://generativelanguage.googleapis.com", APIKey: "k4"}); up != want || name != "gemini-x" {
		t.Errorf("UpstreamOf = %+v, %q; want %+v, gemini-x", up, name, want)
	}
	if _, _, err := gateway.UpstreamOf(m, []gateway.Protocol{gateway.Chat, gateway.Responses, gateway.Messages}); err == nil || !strings.Contains(err.Error(), "Google Gemini") {
		t.Errorf("an agent that speaks no Gemini: %v", err)
	}
}
