package provider

import (
	"context"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/backoff"
	"github.com/aa-grade/aa-grade/internal/testsupport/closedport"
)

// closedPort is a base URL on 127.0.0.1 where nothing listens: a port just freed.
func closedPort(t *testing.T) string { return "http://" + closedport.Addr(t) + "/v1" }

// TestUnreachableProviderFailsFast: a refused connection, a host that does not resolve and a
// TLS handshake that fails are tried a few times only (counted by the retries recorded, not by
// the clock), then fail as ErrUnreachable naming the base URL and the variable that set it.
// The bounded context stands for "within seconds": the retry budget (10 minutes) never decides.
func TestUnreachableProviderFailsFast(t *testing.T) {
	tlsSrv := httptest.NewUnstartedServer(http.NotFoundHandler())
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the refused handshakes are the point
	tlsSrv.StartTLS()                                   // with a certificate no one trusts
	defer tlsSrv.Close()
	for _, c := range []struct {
		name, spec, variable, base string
	}{
		{"refused", "openai-api/fake/m1", "FAKE_BASE_URL", closedPort(t)},
		{"no such host", "openai-api/fake/m1", "FAKE_BASE_URL", "http://aa-grade-test.invalid/v1"},
		{"tls", "openai/m1", "OPENAI_BASE_URL", tlsSrv.URL + "/v1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := map[string]string{c.variable: c.base, "OPENAI_API_KEY": testKey}
			m, err := New(c.spec, func(k string) string { return env[k] }, Options{
				Retry: backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond}})
			if err != nil {
				t.Fatal(err)
			}
			var events []model.Event
			ctx, cancel := context.WithTimeout(recording(context.Background(), &events), 30*time.Second)
			defer cancel()
			_, err = m.Complete(ctx, conversation)
			if !errors.Is(err, ErrUnreachable) || ctx.Err() != nil {
				t.Fatalf("err = %v (context: %v)", err, ctx.Err())
			}
			for _, want := range []string{c.base, c.variable} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not name %s: %v", want, err)
				}
			}
			if n := countKind(events, model.KindRetry); n != backoff.UnreachableAttempts-1 {
				t.Errorf("%d retries, want %d", n, backoff.UnreachableAttempts-1)
			}
		})
	}
}

// TestDefaultBaseURLNamesItsVariable: with no variable set, the source of the default names
// the variable that would change it.
func TestDefaultBaseURLNamesItsVariable(t *testing.T) {
	m, err := New("anthropic/m1", func(k string) string { return map[string]string{"ANTHROPIC_API_KEY": testKey}[k] }, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if src := m.(*Anthropic).BaseURLSource; !strings.Contains(src, "default") || !strings.Contains(src, "ANTHROPIC_BASE_URL") {
		t.Fatalf("source %q", src)
	}
}

// TestThrottlingKeepsItsPatientRetries: 429s and 5xx are retried past the few attempts an
// unreachable provider gets.
func TestThrottlingKeepsItsPatientRetries(t *testing.T) {
	f := &fakeChat{}
	for range backoff.UnreachableAttempts + 2 {
		f.answers = append(f.answers, status(429, `{"error":{"message":"slow down"}}`), status(500, `{"error":{"message":"oops"}}`))
	}
	f.answers = append(f.answers, status(200, `{"choices":[{"message":{"content":"fine"}}],"usage":{}}`))
	failures := len(f.answers) - 1
	m, events := newChat(t, f)
	reply, err := m.Complete(context.Background(), conversation)
	if err != nil || reply.Message.Content != "fine" {
		t.Fatalf("reply %+v, err %v", reply, err)
	}
	if n := countKind(*events, model.KindRetry); n != failures {
		t.Fatalf("%d retries, want %d", n, failures)
	}
}

// countKind counts the events of one kind.
func countKind(events []model.Event, kind model.EventKind) int {
	n := 0
	for _, e := range events {
		if e.Kind == kind {
			n++
		}
	}
	return n
}
