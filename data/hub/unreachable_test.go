package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/closedport"
)

// TestUnreachableHub: a Hub that cannot be reached (nothing listening, a name that does not
// resolve) fails after a few attempts or at once, counted, as ErrUnreachable naming the endpoint; a Hub
// that answers 503 keeps every attempt and is not called unreachable.
func TestUnreachableHub(t *testing.T) {
	closed := "http://" + closedport.Addr(t)
	busy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer busy.Close()
	retry := Retry{Attempts: 6, Base: time.Millisecond, Max: time.Millisecond}
	for _, c := range []struct {
		endpoint    string
		unreachable bool
		retries     int // at most, when unreachable; exactly, when the Hub answers
	}{
		{closed, true, backoff.UnreachableAttempts - 1},
		{"http://hub.aa-grade-test.invalid", true, backoff.UnreachableAttempts - 1}, // not retried when the resolver says no such host,
		{busy.URL, false, retry.Attempts - 1},
	} {
		client := NewClient(Config{Endpoint: c.endpoint, Timeout: 5 * time.Second, Retry: retry})
		retries := 0
		client.OnRetry = func(string, int, time.Duration, error) { retries++ }
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, err := client.Revision(ctx, "owner/name", "main")
		cancel()
		if errors.Is(err, ErrUnreachable) != c.unreachable {
			t.Errorf("%s: err %v, want ErrUnreachable: %v", c.endpoint, err, c.unreachable)
		}
		if retries > c.retries || (!c.unreachable && retries != c.retries) {
			t.Errorf("%s: %d retries, want %d (at most, when unreachable)", c.endpoint, retries, c.retries)
		}
		if c.unreachable && !strings.Contains(err.Error(), c.endpoint) {
			t.Errorf("%s: the error does not name the endpoint: %v", c.endpoint, err)
		}
	}
}
