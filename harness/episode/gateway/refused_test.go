package gateway_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/internal/testsupport/closedport"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// TestPermanentRefusalStopsTheEpisode: a refusal no retry cures (a quota refusal sent as a
// 429, a 402, a billing error, a 501, a 200 whose body is a web page; Gemini's shapes are
// harness/models/provider's TestPermanentRefusals) is not retried, goes back to the agent as it came
// (the web page, which no agent reads, as a 502 saying why), and is told once, as
// provider.Permanent, naming the base URL and its source, so that the episode stops its agent
// and the run stops; a context overflow is the agent's to handle and is told nothing; an
// unreachable provider is told after its few attempts.
func TestPermanentRefusalStopsTheEpisode(t *testing.T) {
	for _, c := range []struct {
		name     string
		protocol gateway.Protocol
		answer   answer
		words    string
	}{
		{"openai insufficient_quota", gateway.Chat, status(http.StatusTooManyRequests,
			`{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","code":"insufficient_quota"}}`), "exceeded your current quota"},
		{"openrouter 402", gateway.Chat, status(http.StatusPaymentRequired, `{"error":{"code":402,"message":"Insufficient credits"}}`), "Insufficient credits"},
		{"anthropic billing_error", gateway.Messages, status(http.StatusTooManyRequests,
			`{"type":"error","error":{"type":"billing_error","message":"There is an issue with your billing."}}`), "issue with your billing"},
		{"anthropic 501", gateway.Messages, status(http.StatusNotImplemented, `<html>Not Implemented</html>`), "Not Implemented"},
		{"a web page answered 200", gateway.Chat, status(http.StatusOK, "<!DOCTYPE html>\n<html><title>Welcome to nginx!</title></html>", "Content-Type", "text/html"),
			"the answer is not the API's JSON"},
		{"a web page claiming JSON", gateway.Responses, status(http.StatusOK, "Welcome to nginx!"), "Welcome to nginx!"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newProvider(t, c.protocol, c.answer)
			var mu sync.Mutex
			var told []error
			e := newEpisode(t, f, func(cfg *gateway.Config) {
				cfg.Upstream.BaseURLSource = "set by TEST_BASE_URL"
				cfg.Permanent = func(err error) {
					mu.Lock()
					defer mu.Unlock()
					told = append(told, err)
				}
			})
			resp, _ := e.call(t, c.protocol, runModel, false)
			if resp.StatusCode == http.StatusOK {
				t.Fatal("the refusal did not go back to the agent")
			}
			if f.calls() != 1 {
				t.Errorf("%d calls, want 1: a permanent refusal is not retried", f.calls())
			}
			mu.Lock()
			defer mu.Unlock()
			if len(told) != 1 {
				t.Fatalf("told %d times, want once", len(told))
			}
			if !provider.Permanent(told[0]) {
				t.Errorf("told %v, not permanent", told[0])
			}
			textcheck.Has(t, "what the episode was told", told[0].Error(), f.baseURL(), "set by TEST_BASE_URL", c.words)
			if got := e.gw.Totals().Permanent; got != told[0] {
				t.Errorf("totals keep %v", got)
			}
		})
	}
	t.Run("context overflow", func(t *testing.T) {
		f := newProvider(t, gateway.Messages, status(http.StatusBadRequest, `{"type":"error","error":{"type":"invalid_request_error","message":"prompt is too long: 250000 tokens > 200000 maximum"}}`))
		e := newEpisode(t, f, nil)
		e.call(t, gateway.Messages, runModel, false)
		if got := e.gw.Totals().Permanent; got != nil {
			t.Errorf("a context overflow counts as permanent: %v", got)
		}
	})
	t.Run("unreachable", func(t *testing.T) {
		e := newEpisode(t, newProvider(t, gateway.Chat), func(cfg *gateway.Config) { cfg.Upstream.BaseURL = "http://" + closedport.Addr(t) + "/v1" })
		resp, _ := e.call(t, gateway.Chat, runModel, false)
		if resp.StatusCode != http.StatusBadGateway {
			t.Errorf("status %d, want 502", resp.StatusCode)
		}
		if got := e.gw.Totals().Permanent; !strings.Contains(errText(got), "connection refused") {
			t.Errorf("totals keep %v", got)
		}
	})
}

// errText is err's text, "" for nil.
func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
