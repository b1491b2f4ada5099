package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
)

// Each provider's error answers as they come over the wire (bodies as the APIs document them).
const (
	openAIQuota    = `{"error":{"message":"You exceeded your current quota, please check your plan and billing details.","type":"insufficient_quota","param":null,"code":"insufficient_quota"}}`
	openAIRate     = `{"error":{"message":"Rate limit reached for gpt-test in organization org-x on requests per min (RPM): Limit 3, Used 3.","type":"requests","code":"rate_limit_exceeded"}}`
	anthropicLow   = `{"type":"error","error":{"type":"invalid_request_error","message":"Your credit balance is too low to access the Anthropic API. Please go to Plans & Billing to upgrade or purchase credits."}}`
	anthropicBill  = `{"type":"error","error":{"type":"billing_error","message":"There is an issue with your billing."}}`
	anthropicRate  = `{"type":"error","error":{"type":"rate_limit_error","message":"Number of request tokens has exceeded your per-minute rate limit"}}`
	geminiDaily    = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerDayPerProjectPerModel-FreeTier","quotaValue":"50"}]},{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"34s"}]}}`
	geminiNoTier   = `{"error":{"code":429,"message":"You exceeded your current quota. * Quota exceeded for metric: generativelanguage.googleapis.com/generate_content_free_tier_input_token_count, limit: 0, model: gemini-test","status":"RESOURCE_EXHAUSTED"}}`
	geminiMinute   = `{"error":{"code":429,"message":"You exceeded your current quota, please check your plan and billing details.","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.QuotaFailure","violations":[{"quotaMetric":"generativelanguage.googleapis.com/generate_content_free_tier_requests","quotaId":"GenerateRequestsPerMinutePerProjectPerModel-FreeTier","quotaValue":"10"}]}]}}`
	openRouterPaid = `{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/settings/credits"}}`
	webPage        = `<!DOCTYPE html><html><head><title>Welcome to nginx!</title></head><body>It works</body></html>`
)

// providerCase is a provider as New builds it: its spec, the variable of its base URL, the
// path its base URL carries, and a good answer.
type providerCase struct {
	spec, variable, base, good string
}

var (
	chatProvider       = providerCase{"openai/gpt-test", "OPENAI_BASE_URL", "/v1", `{"choices":[{"message":{"content":"fine"}}],"usage":{}}`}
	anthropicProvider  = providerCase{"anthropic/claude-test", "ANTHROPIC_BASE_URL", "", `{"content":[{"type":"text","text":"fine"}],"usage":{"input_tokens":1,"output_tokens":1}}`}
	geminiProvider     = providerCase{"google/gemini-test", "GOOGLE_GEMINI_BASE_URL", "", `{"candidates":[{"content":{"parts":[{"text":"fine"}]}}],"usageMetadata":{}}`}
	openRouterProvider = providerCase{"openrouter/org/test", "OPENROUTER_BASE_URL", "/api/v1", chatProvider.good}
)

// onceThenGood is a provider on 127.0.0.1 whose first answer is first and every later one
// good; it counts the requests.
func onceThenGood(t *testing.T, p providerCase, first func(http.ResponseWriter, *http.Request)) (base string, requests *atomic.Int64) {
	requests = &atomic.Int64{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		if requests.Add(1) == 1 {
			first(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, p.good)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + p.base, requests
}

// answer writes a status and body, the body's type guessed from its first byte.
func answer(code int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if strings.HasPrefix(body, "<") {
			w.Header().Set("Content-Type", "text/html")
		}
		w.WriteHeader(code)
		io.WriteString(w, body)
	}
}

// callOnce makes one call of p at base, with retries a millisecond apart and an idle timeout
// of a second (long enough that a loaded machine reading an answer already sent never meets
// it).
func callOnce(t *testing.T, p providerCase, base string) error {
	env := map[string]string{p.variable: base, "OPENAI_API_KEY": testKey, "ANTHROPIC_API_KEY": testKey, "GEMINI_API_KEY": testKey, "OPENROUTER_API_KEY": testKey}
	m, err := New(p.spec, func(k string) string { return env[k] }, Options{
		Retry: backoff.Policy{Base: time.Millisecond, Max: time.Millisecond, MaxRetryAfter: time.Millisecond}, IdleTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Complete(context.Background(), conversation)
	return err
}

// TestPermanentRefusals: every refusal no retry cures, in each provider's shape, fails at the
// first attempt, as permanent, naming the base URL, the variable that set it and the
// provider's own words.
func TestPermanentRefusals(t *testing.T) {
	for _, c := range []struct {
		name     string
		provider providerCase
		code     int
		body     string
		words    string
	}{
		{"openai 429 insufficient_quota", chatProvider, 429, openAIQuota, "exceeded your current quota"},
		{"anthropic low credit", anthropicProvider, 400, anthropicLow, "credit balance is too low"},
		{"anthropic billing_error", anthropicProvider, 402, anthropicBill, "issue with your billing"},
		{"anthropic billing_error sent as 429", anthropicProvider, 429, anthropicBill, "issue with your billing"},
		{"gemini daily quota", geminiProvider, 429, geminiDaily, "exceeded your current quota"},
		{"gemini limit 0", geminiProvider, 429, geminiNoTier, "limit: 0"},
		{"openrouter 402", openRouterProvider, 402, openRouterPaid, "Insufficient credits"},
		{"openrouter 402 in a 200", openRouterProvider, 200, openRouterPaid, "Insufficient credits"},
		{"400", chatProvider, 400, `{"error":{"message":"Unsupported parameter: 'temperature'"}}`, "Unsupported parameter"},
		{"401", chatProvider, 401, `{"error":{"message":"Incorrect API key provided"}}`, "Incorrect API key"},
		{"403", anthropicProvider, 403, `{"type":"error","error":{"type":"permission_error","message":"Your API key does not have permission"}}`, "does not have permission"},
		{"404", geminiProvider, 404, `{"error":{"code":404,"message":"models/gemini-test is not found","status":"NOT_FOUND"}}`, "is not found"},
		{"405", chatProvider, 405, webPage, "Welcome to nginx"},
		{"501 web page", chatProvider, 501, webPage, "Welcome to nginx"},
		{"200 web page", chatProvider, 200, webPage, "Welcome to nginx"},
		{"200 JSON string", anthropicProvider, 200, `"<html>Welcome to nginx</html>"`, "Welcome to nginx"},
		{"200 JSON list", geminiProvider, 200, `["Welcome to nginx"]`, "Welcome to nginx"},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, requests := onceThenGood(t, c.provider, answer(c.code, c.body))
			err := callOnce(t, c.provider, base)
			if !Permanent(err) {
				t.Fatalf("not permanent: %v", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1: a permanent refusal is not retried", n)
			}
			for _, want := range []string{base, "set by " + c.provider.variable, c.words} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("the error does not say %q: %v", want, err)
				}
			}
		})
	}
}

// TestTransientFailuresRetried: throttling (each provider's rate, Gemini's per-minute quota),
// server errors, a JSON answer cut short and an answer that stops coming (a 500 that never
// ends, ended by the idle timeout, not the attempt's 15 minutes) are retried, and the call
// succeeds at the next attempt.
func TestTransientFailuresRetried(t *testing.T) {
	hang := func(code int) func(http.ResponseWriter, *http.Request) {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(code)
			io.WriteString(w, `{"error":`)
			w.(http.Flusher).Flush()
			<-r.Context().Done() // never ends: the client hangs up
		}
	}
	for _, c := range []struct {
		name     string
		provider providerCase
		first    func(http.ResponseWriter, *http.Request)
	}{
		{"openai rate", chatProvider, answer(429, openAIRate)},
		{"anthropic rate", anthropicProvider, answer(429, anthropicRate)},
		{"anthropic overloaded", anthropicProvider, answer(529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)},
		{"gemini per-minute quota", geminiProvider, answer(429, geminiMinute)},
		{"503", openRouterProvider, answer(503, webPage)},
		{"json cut short", chatProvider, answer(200, `{"choices":[{"mess`)},
		{"500 that never ends", chatProvider, hang(500)},
		{"200 that never ends", geminiProvider, hang(200)},
	} {
		t.Run(c.name, func(t *testing.T) {
			base, requests := onceThenGood(t, c.provider, c.first)
			if err := callOnce(t, c.provider, base); err != nil {
				t.Fatal(err)
			}
			if n := requests.Load(); n != 2 {
				t.Errorf("%d requests, want 2", n)
			}
		})
	}
}

// TestClassify: the classes of errors that came from no answer, wrapped or not.
func TestClassify(t *testing.T) {
	for err, want := range map[error]Class{
		nil:              ClassOther,
		context.Canceled: ClassOther,
		fmt.Errorf("turn 2: %w", context.Canceled):                                                            ClassOther,
		fmt.Errorf("%w: %w", model.ErrContextOverflow, &APIError{Status: 400, Message: "prompt is too long"}): ClassOther,
		fmt.Errorf("turn 3: %w", &APIError{Status: 404, Message: "no such model"}):                            ClassPermanent,
		&APIError{Status: 200, Code: "server_error", Message: "failed"}:                                       ClassTransient,
		&APIError{Status: 501, Message: "not implemented"}:                                                    ClassPermanent,
		fmt.Errorf("%w (12 bytes)", errNotAPI):                                                                ClassPermanent,
		fmt.Errorf("%w (12 bytes)", errMalformed):                                                             ClassTransient,
		context.DeadlineExceeded:                                                                              ClassTransient,
		errors.New("a reply the loop cannot read"):                                                            ClassOther,
	} {
		if got := Classify(err); got != want {
			t.Errorf("Classify(%v) = %d, want %d", err, got, want)
		}
	}
}
