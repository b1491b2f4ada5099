package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// stalled sends the status and the first half of body, then nothing until the gateway hangs
// up: an upstream that stops mid-answer.
func stalled(body string) answer {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(body[:len(body)/2]))
		http.NewResponseController(w).Flush()
		<-r.Context().Done()
	}
}

// idleEpisode is an episode whose gateway gives an answer 50 ms between two bytes: the
// upstreams below stall for good, so the test waits for no clock but the gateway's.
func idleEpisode(t *testing.T, f *fakeProvider) *episode {
	return newEpisode(t, f, func(cfg *gateway.Config) { cfg.IdleTimeout = 50 * time.Millisecond })
}

// TestIdleUpstream: an answer whose bytes stop coming once its header came fails its attempt
// at the gateway's idle timeout, as the providers' do (issue 36): a plain answer is retried
// (the next attempt answers, the agent gets it whole), a stream stopped after its first event
// is cut, the agent's connection with it, and recorded as stopped; either counts the call at
// its worst case, billed as it may have been.
func TestIdleUpstream(t *testing.T) {
	t.Run("plain, mid-body", func(t *testing.T) {
		f := newProvider(t, gateway.Chat, stalled(plainAnswers[gateway.Chat]))
		e := idleEpisode(t, f)
		resp, body := e.call(t, gateway.Chat, runModel, false)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("status %d, want the second attempt's 200", resp.StatusCode)
		}
		if body != plainAnswers[gateway.Chat] {
			t.Errorf("the agent read %q, want the second attempt's answer", body)
		}
		if f.calls() != 2 {
			t.Errorf("%d calls, want 2: the stalled attempt retried", f.calls())
		}
		checkRecordedStop(t, e.recorded(), model.KindRetry)
	})
	t.Run("streamed, after the first event", func(t *testing.T) {
		events := streamEvents[gateway.Chat]
		f := newProvider(t, gateway.Chat, streamed(events, make(chan struct{}) /* never closed: the upstream stalls */))
		e := idleEpisode(t, f)
		_, body, err := do(t, e.request(t, gateway.Chat, gateway.Chat.Path(), requestBody(gateway.Chat, runModel, true)))
		if err == nil {
			t.Error("the agent read the stream to its end, want it cut")
		}
		if body != events[0] {
			t.Errorf("the agent read %q, want the first event", body)
		}
		if f.calls() != 1 {
			t.Errorf("%d calls, want 1: a stream under way is not retried", f.calls())
		}
		checkRecordedStop(t, e.recorded(), model.KindResponse)
	})
}

// checkRecordedStop checks that an event of kind says the answer stopped coming, and that the
// call counted at its worst case.
func checkRecordedStop(t *testing.T, events []model.Event, kind model.EventKind) {
	t.Helper()
	var stopped, worst bool
	for _, ev := range events {
		stopped = stopped || (ev.Kind == kind && strings.Contains(ev.Error, "the answer stopped coming (no byte for 50ms)"))
		worst = worst || ev.Kind == model.KindNoUsage
	}
	if !stopped {
		t.Errorf("no %s event says the answer stopped coming: %+v", kind, events)
	}
	if !worst {
		t.Errorf("the call is not counted at its worst case: %+v", events)
	}
}
