package provider

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestRetryStopEndsABackOff: a call waiting 5 minutes (Retry-After) for its next attempt
// ends as soon as its retry stop closes, with ErrRetryStopped and the last failure, which is
// no permanent one; without the stop the same call would still be waiting when the test's
// context ends.
func TestRetryStopEndsABackOff(t *testing.T) {
	base, requests := onceThenGood(t, chatProvider, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "300")
		answer(http.StatusTooManyRequests, openAIRate)(w, r)
	})
	env := map[string]string{"OPENAI_BASE_URL": base, "OPENAI_API_KEY": testKey}
	m, err := New(chatProvider.spec, func(k string) string { return env[k] }, Options{Retry: DefaultRetry})
	if err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ctx = model.WithRecorder(WithRetryStop(ctx, stop), func(e model.Event) {
		if e.Kind == model.KindRetry {
			close(stop) // Ctrl-C, as the call starts its back-off
		}
	})
	_, err = m.Complete(ctx, conversation)
	if !errors.Is(err, ErrRetryStopped) || ctx.Err() != nil {
		t.Fatalf("err = %v (context: %v)", err, ctx.Err())
	}
	if Permanent(err) {
		t.Errorf("a stopped retry counts as permanent: %v", err)
	}
	if n := requests.Load(); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}
