package gateway_test

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/internal/testsupport/closedport"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsonschema"
)

// TestPassesCallsOn: each protocol's call, plain and streamed, reaches the provider (with
// what TestForwardedRequests shows) and comes back as the provider sent it; the usage is
// counted and the call recorded as the providers of harness/models/provider record theirs.
func TestPassesCallsOn(t *testing.T) {
	prices := &model.Prices{Input: 1, Output: 2}
	for _, p := range protocols {
		for _, stream := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s stream=%v", p, stream), func(t *testing.T) {
				f := newProvider(t, p)
				var usedMu sync.Mutex
				var used []model.Usage // told while the call ends
				e := newEpisode(t, f, func(c *gateway.Config) {
					c.Prices = prices
					c.Used = func(u model.Usage) {
						usedMu.Lock()
						defer usedMu.Unlock()
						used = append(used, u)
					}
				})
				resp, body := e.call(t, p, runModel, stream)
				want := plainAnswers[p]
				if stream {
					want = strings.Join(streamEvents[p], "")
				}
				if resp.StatusCode != http.StatusOK || body != want {
					t.Fatalf("answer %d %q, want the provider's %q", resp.StatusCode, body, want)
				}
				if ct := resp.Header.Get("Content-Type"); stream != strings.HasPrefix(ct, "text/event-stream") {
					t.Errorf("Content-Type %q", ct)
				}
				_, sent, _ := f.sent(0) // its shape: TestForwardedRequests
				tot := e.gw.Totals()
				wantTotals(t, tot, 1, 11, 7)
				if tot.CostUSD == nil {
					t.Errorf("totals' cost unknown, want 25e-6: %+v", tot)
				} else if *tot.CostUSD != 25e-6 {
					t.Errorf("totals' cost %g, want 25e-6", *tot.CostUSD)
				}
				usedMu.Lock()
				defer usedMu.Unlock()
				if len(used) != 1 || used[0] != tot.Usage {
					t.Errorf("Used was told %+v, want the call's usage %+v once", used, tot.Usage)
				}
				events := e.recorded()
				if got, want := kindsOf(events), []model.EventKind{model.KindRequest, model.KindResponse}; !slices.Equal(got, want) {
					t.Fatalf("recorded %v, want %v: %+v", got, want, events)
				}
				req, got := events[0], events[1]
				if req.URL != f.srv.URL+p.Path() {
					t.Errorf("recorded the URL %s", req.URL)
				}
				for k, v := range req.Header {
					if strings.EqualFold(k, "Authorization") || strings.EqualFold(k, "X-Api-Key") {
						if v != "[REDACTED]" {
							t.Errorf("recorded %s: %s", k, v)
						}
					}
				}
				if string(req.Body) != sent {
					t.Errorf("recorded the request %s, want what the provider got, %s", req.Body, sent)
				}
				if got.Status != http.StatusOK {
					t.Errorf("recorded the status %d, want 200", got.Status)
				}
				if got.Error != "" {
					t.Errorf("recorded the error %q, want none", got.Error)
				}
				if recordedText(got.Body) != want {
					t.Errorf("recorded the answer %s", got.Body)
				}
			})
		}
	}
}

// recordedText is a recorded body as text: a stream's text is a JSON string, a JSON answer
// itself.
func recordedText(b json.RawMessage) string {
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return string(b)
}

// TestRefusesOtherCredentials: no token, another one, or the token cut short is a 401 in the
// protocol's own shape; nothing reaches the provider, and the attempt is recorded.
func TestRefusesOtherCredentials(t *testing.T) {
	for _, p := range protocols {
		f := newProvider(t, p)
		e := newEpisode(t, f, nil)
		for name, set := range map[string]func(*http.Request){
			"none":           func(r *http.Request) {},
			"another bearer": func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+canary) },
			"token cut":      func(r *http.Request) { r.Header.Set("x-api-key", token[:len(token)-1]) },
			"token as basic": func(r *http.Request) { r.Header.Set("Authorization", "Basic "+token) },
		} {
			req := e.request(t, p, p.Path(), requestBody(p, runModel, false))
			req.Header.Del("Authorization")
			req.Header.Del("x-api-key")
			set(req)
			resp, body, _ := do(t, req)
			kind, _ := errorOf(t, p, body)
			if resp.StatusCode != http.StatusUnauthorized || (kind != "authentication_error" && kind != "invalid_api_key") {
				t.Errorf("%s, %s: %d %s", p, name, resp.StatusCode, body)
			}
		}
		if f.calls() != 0 {
			t.Errorf("%s: the provider was called %d times", p, f.calls())
		}
		events := e.recorded()
		if len(events) != 8 {
			t.Errorf("%s: recorded %d events, want 8: %+v", p, len(events), events)
		} else {
			if events[1].Status != http.StatusUnauthorized {
				t.Errorf("%s: recorded the status %d, want 401", p, events[1].Status)
			}
			if !strings.Contains(events[1].Error, "refused") {
				t.Errorf("%s: recorded the error %q, want one saying refused", p, events[1].Error)
			}
		}
		if got := e.gw.Totals(); got.Refused != 4 || got.Calls != 0 {
			t.Errorf("%s: totals %+v", p, got)
		}
	}
}

// TestModels: another model is refused naming the run's; a mapped one (a CLI's background
// model) goes to the provider as the run's model; the models list names the run's alone.
func TestModels(t *testing.T) {
	for _, p := range protocols {
		f := newProvider(t, p)
		e := newEpisode(t, f, func(c *gateway.Config) { c.Mapped = []string{"*-haiku-*"} })
		resp, body := e.call(t, p, "gpt-other", false)
		wantError(t, p.String()+": another model", p, resp, body, http.StatusNotFound, []string{"not_found_error", "model_not_found"}, runModel)
		resp, body, _ = do(t, e.request(t, p, p.Path(), `{"model":7}`))
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("%s: a model that is no string: %d %s", p, resp.StatusCode, body)
		}
		if f.calls() != 0 {
			t.Fatalf("%s: refused models reached the provider", p)
		}
		if resp, body := e.call(t, p, "claude-haiku-4-5", false); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: a mapped model: %d %s", p, resp.StatusCode, body)
		}
		if _, sent, _ := f.sent(0); gjson.Get(sent, "model").String() != runModel || !strings.Contains(sent, `"messages"`) && !strings.Contains(sent, `"input"`) {
			t.Errorf("%s: a mapped model went as %s", p, sent)
		}

		req := e.request(t, p, "/v1/models", "")
		req.Method = http.MethodGet
		resp, body, _ = do(t, req)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: models: status %d, want 200: %s", p, resp.StatusCode, body)
		}
		if n := gjson.Get(body, "data.#").Int(); n != 1 {
			t.Errorf("%s: models lists %d, want 1: %s", p, n, body)
		}
		if id := gjson.Get(body, "data.0.id").String(); id != runModel {
			t.Errorf("%s: models lists %q, want %q", p, id, runModel)
		}
		if wantAnthropic := p == gateway.Messages; gjson.Get(body, "has_more").Exists() != wantAnthropic {
			t.Errorf("%s: models in the other protocol's shape: %s", p, body)
		}
	}
}

// TestRoutes: what the gateway does not pass on is refused in the shape of the protocol asked
// for; Anthropic's token counting goes to the provider but counts as no model call.
func TestRoutes(t *testing.T) {
	f := newProvider(t, gateway.Messages, status(http.StatusOK, `{"input_tokens":42}`))
	e := newEpisode(t, f, func(c *gateway.Config) { c.Caps.Calls = 1 })
	resp, body, _ := do(t, e.request(t, gateway.Messages, "/v1/messages/count_tokens", requestBody(gateway.Messages, runModel, false)))
	if resp.StatusCode != http.StatusOK {
		t.Errorf("count_tokens: status %d, want 200", resp.StatusCode)
	}
	if body != `{"input_tokens":42}` {
		t.Errorf("count_tokens: %s, want the provider's answer", body)
	}
	if tot := e.gw.Totals(); tot.Calls != 0 {
		t.Errorf("count_tokens counted as %d calls, want 0: %+v", tot.Calls, tot)
	}
	if _, _, path := f.sent(0); path != "/v1/messages/count_tokens" {
		t.Errorf("count_tokens went to %s", path)
	}
	f.queue(func(w http.ResponseWriter, r *http.Request) {
		status(http.StatusOK, plainAnswers[gateway.Messages]+r.URL.RawQuery)(w, r)
	})
	resp, body, _ = do(t, e.request(t, gateway.Messages, "/v1/messages?beta=true", requestBody(gateway.Messages, runModel, false)))
	if resp.StatusCode != http.StatusOK || !strings.HasSuffix(body, "beta=true") {
		t.Errorf("a call with a query: %d %s", resp.StatusCode, body)
	}

	resp, body, _ = do(t, e.request(t, gateway.Chat, "/v1/chat/completions", requestBody(gateway.Chat, runModel, false)))
	wantError(t, "another protocol", gateway.Chat, resp, body, http.StatusNotFound, []string{"unknown_url"}, "/v1/messages")
	resp, body, _ = do(t, e.request(t, gateway.Messages, "/v1/complete", `{}`))
	if kind, _ := errorOf(t, gateway.Messages, body); resp.StatusCode != http.StatusNotFound || kind != "not_found_error" {
		t.Errorf("an unknown path: %d %s", resp.StatusCode, body)
	}
	req := e.request(t, gateway.Messages, "/v1/messages", "")
	req.Method = http.MethodGet
	if resp, body, _ := do(t, req); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d %s", resp.StatusCode, body)
	}
	resp, body, _ = do(t, e.request(t, gateway.Messages, "/v1/messages", `{"model":"run-model-1",`))
	if kind, _ := errorOf(t, gateway.Messages, body); resp.StatusCode != http.StatusBadRequest || kind != "invalid_request_error" {
		t.Errorf("a body that is not JSON: %d %s", resp.StatusCode, body)
	}
	if f.calls() != 2 {
		t.Errorf("the provider got %d calls", f.calls())
	}
}

// TestCaps: past a cap, a call is a 400 (which clients do not retry) in the protocol's shape;
// the episode is told once; the usage of streams counts as that of plain answers.
func TestCaps(t *testing.T) {
	for name, caps := range map[string]gateway.Caps{"calls": {Calls: 2}, "tokens": {Tokens: 36}, "cost": {CostUSD: 50e-6}} {
		for _, p := range protocols {
			f := newProvider(t, p)
			e := newEpisode(t, f, func(c *gateway.Config) { c.Caps, c.Prices = caps, &model.Prices{Input: 1, Output: 2} })
			for i := range 2 {
				if resp, body := e.call(t, p, runModel, i == 1); resp.StatusCode != http.StatusOK {
					t.Fatalf("%s %s: call %d: %d %s", name, p, i+1, resp.StatusCode, body)
				}
			}
			for range 2 {
				resp, body := e.call(t, p, runModel, true)
				wantError(t, name+" "+p.String()+": past the cap", p, resp, body, http.StatusBadRequest, []string{"invalid_request_error", "episode_cap_reached"}, "cap")
			}
			tot := e.gw.Totals()
			if f.calls() != 2 {
				t.Errorf("%s %s: the provider got %d calls, want 2", name, p, f.calls())
			}
			if tot.Calls != 2 || tot.Refused != 2 {
				t.Errorf("%s %s: totals of %d calls and %d refused, want 2 and 2", name, p, tot.Calls, tot.Refused)
			}
			if !errors.Is(tot.Capped, gateway.ErrCap) {
				t.Errorf("%s %s: totals capped by %v, want ErrCap", name, p, tot.Capped)
			}
			if told := e.told(); len(told) != 1 || !errors.Is(told[0], gateway.ErrCap) {
				t.Errorf("%s %s: told %v", name, p, told)
			}
		}
	}
}

// TestNewRefuses: a configuration the gateway cannot hold to is an error, naming what.
func TestNewRefuses(t *testing.T) {
	for want, change := range map[string]func(*gateway.Config){
		"token":    func(c *gateway.Config) { c.Token = "short" },
		"no model": func(c *gateway.Config) { c.Model = "" },
		"protocol": func(c *gateway.Config) { c.Upstream.Protocol = 7 },
		"base URL": func(c *gateway.Config) { c.Upstream.BaseURL = "api.openai.com/v1" },
		"0 (none)": func(c *gateway.Config) { c.Caps.Calls = -1 },
		"prices":   func(c *gateway.Config) { c.Caps.CostUSD = 1 },
		"pattern":  func(c *gateway.Config) { c.Mapped = []string{"claude-[haiku"} },
	} {
		cfg := gateway.Config{Token: token, Model: runModel, Upstream: gateway.Upstream{BaseURL: "http://127.0.0.1/v1"}}
		change(&cfg)
		if _, err := gateway.New(cfg); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}

// TestRetries: 429s (their retry-after honoured) and 5xx are retried, the limiter fed; a
// stream cut before its first event is retried, one cut after is not and reaches the agent
// cut; an error the provider means (400) goes back at once; an unreachable provider is a 502.
func TestRetries(t *testing.T) {
	t.Run("429 then 500", func(t *testing.T) {
		f := newProvider(t, gateway.Messages,
			status(http.StatusTooManyRequests, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, "retry-after-ms", "1"),
			status(http.StatusInternalServerError, `{"type":"error","error":{"type":"api_error","message":"oops"}}`))
		lim, err := ratelimit.New(ratelimit.Limits{MaxInFlight: 4})
		if err != nil {
			t.Fatal(err)
		}
		e := newEpisode(t, f, func(c *gateway.Config) { c.Limit = lim })
		if resp, body := e.call(t, gateway.Messages, runModel, true); resp.StatusCode != http.StatusOK || body != strings.Join(streamEvents[gateway.Messages], "") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if f.calls() != 3 || e.gw.Totals().Retries != 2 {
			t.Errorf("%d calls, totals %+v", f.calls(), e.gw.Totals())
		}
		if st := lim.Status(); st.Calls != 3 || st.RateLimited != 1 {
			t.Errorf("limiter %+v", st)
		}
		var kinds []string
		for _, ev := range e.recorded() {
			kinds = append(kinds, string(ev.Kind))
		}
		if got := strings.Join(kinds, " "); got != "request response throttle retry response retry response" {
			t.Errorf("recorded %s", got)
		}
	})
	t.Run("cut before the first event", func(t *testing.T) {
		events := streamEvents[gateway.Responses]
		f := newProvider(t, gateway.Responses, cut(events, 0))
		e := newEpisode(t, f, nil)
		if resp, body := e.call(t, gateway.Responses, runModel, true); resp.StatusCode != http.StatusOK || body != strings.Join(events, "") {
			t.Fatalf("%d %s", resp.StatusCode, body)
		}
		if f.calls() != 2 {
			t.Errorf("%d calls", f.calls())
		}
	})
	t.Run("cut after the first event", func(t *testing.T) {
		events := streamEvents[gateway.Chat]
		f := newProvider(t, gateway.Chat, cut(events, 2))
		e := newEpisode(t, f, nil)
		resp, body, err := do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, runModel, true)))
		if err == nil {
			t.Errorf("the agent read the stream to its end, want it cut")
		}
		if resp.StatusCode != http.StatusOK {
			t.Errorf("the agent read the status %d, want 200", resp.StatusCode)
		}
		if body != strings.Join(events[:2], "") {
			t.Errorf("the agent read %q, want the two events sent", body)
		}
		if t.Failed() {
			t.FailNow()
		}
		if f.calls() != 1 {
			t.Errorf("%d calls, want 1 (no retry)", f.calls())
		}
		ev := e.recorded()
		if len(ev) != 3 {
			t.Fatalf("recorded %d events, want 3: %+v", len(ev), ev)
		}
		if !strings.Contains(ev[1].Error, "cut") {
			t.Errorf("recorded the error %q, want one saying cut", ev[1].Error)
		}
		if got := recordedText(ev[1].Body); got != strings.Join(events[:2], "") {
			t.Errorf("recorded the answer %q, want the two events sent", got)
		}
		if ev[2].Kind != model.KindNoUsage {
			t.Errorf("recorded %s last, want %s", ev[2].Kind, model.KindNoUsage)
		}
	})
	t.Run("a stream that ends early", func(t *testing.T) {
		events := streamEvents[gateway.Messages]
		f := newProvider(t, gateway.Messages, streamed(events[:3], nil))
		e := newEpisode(t, f, nil)
		if _, _, err := do(t, e.request(t, gateway.Messages, gateway.Messages.Path(), requestBody(gateway.Messages, runModel, true))); err == nil {
			t.Error("a stream without its message_stop reached the agent whole")
		}
		// It counts at its worst case: the body's bytes in, the request's max_tokens out.
		want := model.Usage{Input: int64(len(requestBody(gateway.Messages, runModel, true))), Output: 100, WorstCase: true}
		if tot := e.gw.Totals(); tot.Usage != want {
			t.Errorf("a cut stream counts %+v, want its worst case %+v", tot.Usage, want)
		}
	})
	t.Run("400", func(t *testing.T) {
		const refused = `{"error":{"message":"bad tool","type":"invalid_request_error","param":null,"code":null}}`
		f := newProvider(t, gateway.Chat, status(http.StatusBadRequest, refused))
		e := newEpisode(t, f, nil)
		resp, body := e.call(t, gateway.Chat, runModel, false)
		wantAnswer(t, resp, body, http.StatusBadRequest, refused)
		if f.calls() != 1 {
			t.Errorf("%d calls, want 1 (no retry)", f.calls())
		}
	})
	t.Run("retries spent", func(t *testing.T) {
		const busy = `{"error":{"message":"busy","type":"server_error","param":null,"code":null}}`
		f := newProvider(t, gateway.Chat, status(503, busy), status(503, busy), status(503, busy))
		e := newEpisode(t, f, func(c *gateway.Config) { c.Budget = 1 })
		resp, body := e.call(t, gateway.Chat, runModel, false)
		wantAnswer(t, resp, body, 503, busy)
		if f.calls() != 1 {
			t.Errorf("%d calls, want 1 (the budget spent)", f.calls())
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		f := newProvider(t, gateway.Responses)
		e := newEpisode(t, f, func(c *gateway.Config) { c.Upstream.BaseURL = "http://" + closedport.Addr(t) + "/v1" })
		resp, body := e.call(t, gateway.Responses, runModel, false)
		wantError(t, "unreachable", gateway.Responses, resp, body, http.StatusBadGateway, []string{"upstream_unreachable"}, "3 attempts")
	})
}

// TestKeyNeverLeaks: a provider that quotes the key, in an error or in a stream, has it
// scrubbed from what the agent reads and from the trajectory; the token never reaches the
// provider.
func TestKeyNeverLeaks(t *testing.T) {
	quoting := strings.ReplaceAll(streamEvents[gateway.Messages][3], "Hello", "your key is "+canary)
	events := append([]string{}, streamEvents[gateway.Messages]...)
	events[3] = quoting
	f := newProvider(t, gateway.Messages,
		status(http.StatusUnauthorized, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key `+canary+`"}}`, "X-Echo", canary),
		streamed(events, nil))
	e := newEpisode(t, f, nil)
	var read strings.Builder
	for _, stream := range []bool{false, true} {
		resp, body := e.call(t, gateway.Messages, runModel, stream)
		fmt.Fprint(&read, resp.Header, body)
	}
	if strings.Contains(read.String(), canary) || !strings.Contains(read.String(), "[REDACTED]") {
		t.Errorf("the agent read the key: %s", read.String())
	}
	recorded, _ := json.Marshal(e.recorded())
	if strings.Contains(string(recorded), canary) {
		t.Errorf("the trajectory holds the key: %s", recorded)
	}
	for i := range f.calls() {
		header, body, _ := f.sent(i)
		if strings.Contains(fmt.Sprint(header, body), token) {
			t.Errorf("the provider got the token: %v %s", header, body)
		}
	}
}

// TestConcurrentCalls: calls made at once, paced by a limiter that lets two go at a time, are
// each answered whole, counted once and recorded as request and response side by side.
func TestConcurrentCalls(t *testing.T) {
	f := newProvider(t, gateway.Chat)
	lim, err := ratelimit.New(ratelimit.Limits{MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := newEpisode(t, f, func(c *gateway.Config) { c.Limit = lim })
	const n = 16
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			stream := i%2 == 0
			want := plainAnswers[gateway.Chat]
			if stream {
				want = strings.Join(streamEvents[gateway.Chat], "")
			}
			if resp, body := e.call(t, gateway.Chat, runModel, stream); resp.StatusCode != http.StatusOK || body != want {
				t.Errorf("call %d: %d %s", i, resp.StatusCode, body)
			}
		})
	}
	wg.Wait()
	wantTotals(t, e.gw.Totals(), n, 11*n, 7*n)
	if st := lim.Status(); st.Calls != n || st.Waiting != 0 {
		t.Errorf("limiter %+v", st)
	}
	pairs, open := 0, false // a call's lines come together: its request, then its response
	for i, ev := range e.recorded() {
		switch ev.Kind {
		case model.KindRequest:
			if open {
				t.Errorf("event %d: a request inside another call's lines", i)
			}
			open = true
		case model.KindResponse:
			if !open {
				t.Errorf("event %d: a response with no request before it", i)
			}
			open = false
			pairs++
		}
	}
	if pairs != n {
		t.Errorf("%d calls recorded", pairs)
	}
}

// TestHangUpCancelsTheCall: an agent that hangs up mid-stream ends the provider's call.
func TestHangUpCancelsTheCall(t *testing.T) {
	ended, stop := make(chan struct{}), make(chan struct{})
	f := newProvider(t, gateway.Responses, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, streamEvents[gateway.Responses][0])
		http.NewResponseController(w).Flush()
		select {
		case <-r.Context().Done():
			close(ended)
		case <-stop: // the test failed: the servers can close
		}
	})
	e := newEpisode(t, f, nil)
	t.Cleanup(func() { close(stop) })
	resp, err := http.DefaultClient.Do(e.request(t, gateway.Responses, gateway.Responses.Path(), requestBody(gateway.Responses, runModel, true)))
	if err != nil {
		t.Fatal(err)
	}
	if ev, err := firstEvent(bufio.NewReader(resp.Body)); err != nil || ev != streamEvents[gateway.Responses][0] {
		t.Fatalf("first event %q, %v", ev, err)
	}
	resp.Body.Close()
	withTimeout(t, "the provider's call ending", ended)
}

// TestStreamsUnbuffered: the agent reads a stream's status and first event while the
// provider has yet to send the rest.
func TestStreamsUnbuffered(t *testing.T) {
	for _, p := range protocols {
		rest := make(chan struct{})
		f := newProvider(t, p, streamed(streamEvents[p], rest))
		e := newEpisode(t, f, nil)
		t.Cleanup(func() { close(rest) }) // first, so that the servers can close
		req := e.request(t, p, p.Path(), requestBody(p, runModel, true))
		first := make(chan struct{})
		go func() {
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer resp.Body.Close()
			if ev, err := firstEvent(bufio.NewReader(resp.Body)); err != nil || ev != streamEvents[p][0] {
				t.Errorf("%s: first event %q, %v", p, ev, err)
			}
			close(first)
		}()
		withTimeout(t, p.String()+": the first event reaching the agent before the stream ended", first)
	}
}

// TestRecordsFollowTheSchema: every line the gateway records, of calls passed on, retried,
// paced, streamed, cut or refused, is a line of the trajectory's published schema, which the
// run folder's readers read.
func TestRecordsFollowTheSchema(t *testing.T) {
	schema := trajectorySchema(t)
	f := newProvider(t, gateway.Chat,
		status(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"requests","code":"rate_limit_exceeded"}}`, "retry-after-ms", "1"),
		status(http.StatusOK, plainAnswers[gateway.Chat]),
		status(http.StatusOK, `{"id":"chatcmpl-2","object":"chat.completion","choices":[]}`),
		cut(streamEvents[gateway.Chat], 1))
	lim, err := ratelimit.New(ratelimit.Limits{MaxInFlight: 2})
	if err != nil {
		t.Fatal(err)
	}
	e := newEpisode(t, f, func(c *gateway.Config) { c.Limit = lim })
	e.call(t, gateway.Chat, runModel, false) // retried
	e.call(t, gateway.Chat, runModel, false) // no usage
	do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, runModel, true)))
	e.call(t, gateway.Chat, runModel, true)
	e.call(t, gateway.Chat, "another-model", false)
	do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), `{"model":"`+runModel+`","messages":[],"plugins":[{"id":"web"}]}`)) // stripped
	kinds := map[model.EventKind]bool{}
	for _, ev := range e.recorded() {
		kinds[ev.Kind] = true
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := schema.Validate(line); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	for _, k := range []model.EventKind{model.KindRequest, model.KindResponse, model.KindRetry, model.KindThrottle, model.KindNoUsage, model.KindStripped} {
		if !kinds[k] {
			t.Errorf("no %s line recorded", k)
		}
	}
}

// trajectorySchema is the trajectory's published schema, which recorded lines must follow.
func trajectorySchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return jsonschema.MustCompileFile(t, "../../vocab/runfolder/trajectory.schema.json")
}
