package gateway_test

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestRefusesBodiesReadApart: a body the provider could read otherwise than the gateway (a
// key twice, the second asking for another model or a stream; an escaped key; a stream field
// that is no boolean) is refused with a 400 in the protocol's shape and recorded, and the
// provider never hears of it.
func TestRefusesBodiesReadApart(t *testing.T) {
	for _, p := range protocols {
		for name, body := range map[string]string{
			"model twice":   strings.TrimSuffix(requestBody(p, runModel, false), "}") + `,"model":"gpt-NOT-ALLOWED"}`,
			"stream twice":  strings.TrimSuffix(requestBody(p, runModel, false), "}") + `,"stream":true}`,
			"escaped key":   strings.TrimSuffix(requestBody(p, runModel, false), "}") + `,"mod\u0065l":"gpt-NOT-ALLOWED"}`,
			"case twice":    strings.TrimSuffix(requestBody(p, runModel, false), "}") + `,"Model":"gpt-NOT-ALLOWED"}`,
			"stream as 1":   strings.Replace(requestBody(p, runModel, false), `"stream":false`, `"stream":1`, 1),
			"after the end": requestBody(p, runModel, false) + `{"model":"gpt-NOT-ALLOWED"}`,
		} {
			t.Run(p.String()+" "+name, func(t *testing.T) {
				f := newProvider(t, p)
				e := newEpisode(t, f, nil)
				resp, answer, _ := do(t, e.request(t, p, p.Path(), body))
				wantError(t, name, p, resp, answer, http.StatusBadRequest, []string{"invalid_request_error", "invalid_request"}, "")
				if n := f.calls(); n != 0 {
					t.Errorf("the provider got %d calls, want none", n)
				}
				events := e.recorded()
				if len(events) != 2 {
					t.Fatalf("recorded %d events, want the request and its refusal: %+v", len(events), events)
				}
				if !strings.Contains(events[1].Error, "refused by the gateway") {
					t.Errorf("recorded the refusal as %q", events[1].Error)
				}
				if tot := e.gw.Totals(); tot.Refused != 1 {
					t.Errorf("totals of %d refused, want 1", tot.Refused)
				}
			})
		}
	}
}

// TestStreamAsksForUsage: a streamed Chat call whose stream_options turn usage off, or say
// it in another type, goes with include_usage true.
func TestStreamAsksForUsage(t *testing.T) {
	for _, opts := range []string{`{"include_usage":false}`, `{"include_usage":"false"}`, `{"include_usage":0}`, `null`} {
		f := newProvider(t, gateway.Chat)
		e := newEpisode(t, f, nil)
		body := strings.TrimSuffix(requestBody(gateway.Chat, runModel, true), "}") + `,"stream_options":` + opts + `}`
		if resp, answer, _ := do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), body)); resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", opts, resp.StatusCode, answer)
		}
		if _, sent, _ := f.sent(0); gjson.Get(sent, "stream_options.include_usage").Type != gjson.True {
			t.Errorf("%s: the provider got %s, want include_usage true", opts, sent)
		}
	}
}

// TestWorstCase: a call whose usage never comes (an upstream that leaves it out of a stream
// or an answer, a stream cut before it, a usage of no tokens) counts at its worst case, on
// every protocol: the body's bytes in, the request's output cap (or the stated default) out;
// Used hears it marked so, the trajectory says how it was reckoned, the turn records it.
func TestWorstCase(t *testing.T) {
	noUsage := map[gateway.Protocol]string{
		gateway.Chat:      strings.Replace(plainAnswers[gateway.Chat], `"usage":{"prompt_tokens":11,"completion_tokens":7,"total_tokens":18}`, `"usage":null`, 1),
		gateway.Responses: strings.Replace(plainAnswers[gateway.Responses], `"usage":{"input_tokens":11,"output_tokens":7,"total_tokens":18}`, `"usage":{}`, 1),
		gateway.Messages:  strings.Replace(plainAnswers[gateway.Messages], `,"usage":{"input_tokens":11,"output_tokens":7}`, ``, 1),
	}
	chatNoUsage := streamEvents[gateway.Chat][:3:3]
	chatNoUsage = append(chatNoUsage, "data: [DONE]\n\n")
	type worst struct {
		name   string
		stream bool
		answer answer
	}
	cases := map[gateway.Protocol][]worst{}
	for _, p := range protocols {
		events := streamEvents[p]
		cases[p] = []worst{
			{"no usage in the answer", false, status(http.StatusOK, noUsage[p])},
			{"cut before the usage", true, cut(events, len(events)-1)},
		}
	}
	cases[gateway.Chat] = append(cases[gateway.Chat], worst{"a stream that ignores include_usage", true, streamed(chatNoUsage, nil)})
	// Anthropic's max_tokens is 100 in requestBody; the OpenAI requests name no cap.
	output := map[gateway.Protocol]int64{gateway.Chat: 128_000, gateway.Responses: 128_000, gateway.Messages: 100}
	for _, p := range protocols {
		for _, c := range cases[p] {
			t.Run(p.String()+" "+c.name, func(t *testing.T) {
				f := newProvider(t, p, c.answer)
				var mu sync.Mutex
				var used []model.Usage
				var turns []model.Usage
				e := newEpisode(t, f, func(cfg *gateway.Config) {
					cfg.Prices = &model.Prices{Input: 1, Output: 1}
					cfg.Used = func(u model.Usage) {
						mu.Lock()
						defer mu.Unlock()
						used = append(used, u)
					}
					cfg.Turn = func(_ int, _ model.Request, reply model.Reply, _ error) {
						mu.Lock()
						defer mu.Unlock()
						turns = append(turns, reply.Usage)
					}
				})
				body := requestBody(p, runModel, c.stream)
				do(t, e.request(t, p, p.Path(), body))
				_, sent, _ := f.sent(0)
				want := model.Usage{Input: int64(len(sent)), Output: output[p], WorstCase: true}
				mu.Lock()
				defer mu.Unlock()
				if len(used) != 1 {
					t.Fatalf("Used was told %+v, want one usage", used)
				}
				if used[0] != want {
					t.Errorf("Used was told %+v, want the worst case %+v", used[0], want)
				}
				if len(turns) != 1 {
					t.Fatalf("turns %+v, want one", turns)
				}
				if turns[0] != want {
					t.Errorf("the turn records %+v, want the worst case %+v", turns[0], want)
				}
				if tot := e.gw.Totals(); *tot.CostUSD != float64(want.Input+want.Output)/1e6 {
					t.Errorf("totals cost $%g, want the worst case's", *tot.CostUSD)
				}
				var said string
				for _, ev := range e.recorded() {
					if ev.Kind == model.KindNoUsage {
						said = ev.Error
					}
				}
				if !strings.Contains(said, "worst case") {
					t.Errorf("the no_usage event says %q, want how the worst case was reckoned", said)
				}
			})
		}
	}
}

// TestGeminiWorstCase: a Gemini stream cut before its usageMetadata counts the request's
// maxOutputTokens, whichever spelling (JSON or proto name) names the larger.
func TestGeminiWorstCase(t *testing.T) {
	f := newProvider(t, gateway.Gemini, cut(geminiEvents, 1))
	var used []model.Usage
	var mu sync.Mutex
	e := newEpisode(t, f, func(cfg *gateway.Config) {
		cfg.Used = func(u model.Usage) {
			mu.Lock()
			defer mu.Unlock()
			used = append(used, u)
		}
	})
	body := `{"contents":[{"role":"user","parts":[{"text":"Hi"}]}],"generationConfig":{"maxOutputTokens":50},"generation_config":{"max_output_tokens":700}}`
	do(t, e.geminiRequest(t, http.MethodPost, provider.GeminiPath(runModel, "streamGenerateContent")+"?alt=sse", body))
	mu.Lock()
	defer mu.Unlock()
	want := model.Usage{Input: int64(len(body)), Output: 700, WorstCase: true}
	if len(used) != 1 {
		t.Fatalf("Used was told %+v, want one usage", used)
	}
	if used[0] != want {
		t.Errorf("Used was told %+v, want %+v", used[0], want)
	}
}

// TestHangUpCountsWorstCase: an agent that hangs up once its call reached the provider, before
// any answer, leaves a call the provider may bill: it counts at its worst case, not at 0.
func TestHangUpCountsWorstCase(t *testing.T) {
	arrived := make(chan struct{})
	f := newProvider(t, gateway.Messages, func(_ http.ResponseWriter, r *http.Request) {
		close(arrived)
		<-r.Context().Done()
	})
	told := make(chan model.Usage, 4)
	e := newEpisode(t, f, func(cfg *gateway.Config) { cfg.Used = func(u model.Usage) { told <- u } })
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := requestBody(gateway.Messages, runModel, false)
	go func() {
		<-arrived
		cancel()
	}()
	if resp, err := http.DefaultClient.Do(e.request(t, gateway.Messages, gateway.Messages.Path(), body).WithContext(ctx)); err == nil {
		resp.Body.Close()
		t.Fatal("the call was answered, want it hung up")
	}
	got := make(chan struct{})
	var u model.Usage
	go func() {
		u = <-told
		close(got)
	}()
	withTimeout(t, "the usage of the call hung up", got)
	if want := (model.Usage{Input: int64(len(body)), Output: 100, WorstCase: true}); u != want {
		t.Errorf("Used was told %+v, want the worst case %+v", u, want)
	}
}
