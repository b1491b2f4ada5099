package runner

import (
	"fmt"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// TestResumeKeepsTheRateLimits: a resume keeps in run.json the rate limits the run before
// recorded, until it records its own.
func TestResumeKeepsTheRateLimits(t *testing.T) {
	dir := t.TempDir()
	backend, err := sandbox.Select(sandbox.NameNone)
	if err != nil {
		t.Fatal(err)
	}
	s := ratelimit.Status{Limits: []ratelimit.InForce{{Name: "tokens", Given: 300000, Learnt: 200000}}, Calls: 12, RateLimited: 1}
	for run := range 2 {
		f, err := runfolder.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Folder: f, Description: Description{Dataset: "demo", Model: "openai/m"}, Repeats: 1, Backend: backend,
			Player: Loop{}, Settings: settings.Settings{MaxTurns: 1}}
		if err := writeHeader(cfg, sandbox.Tools{}); err != nil {
			t.Fatal(err)
		}
		if run == 0 {
			if err := f.RecordRateLimits(s); err != nil {
				t.Fatal(err)
			}
		}
		f.Close()
	}
	h, err := runfolder.ReadHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	if h.RateLimits == nil {
		t.Fatal("after a resume, run.json has no rate limits")
	}
	if got, want := fmt.Sprint(*h.RateLimits), fmt.Sprint(s); got != want {
		t.Errorf("after a resume, the rate limits are %s, want %s", got, want)
	}
}

// TestWaitOfModelEvents: a retry and a call held by the rate limiter begin a wait (the retry's
// failure and time, the limiter's reason and time when it knows it); a call let through ends
// it; other events are no wait.
func TestWaitOfModelEvents(t *testing.T) {
	now := time.Date(2026, 5, 1, 14, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		e    model.Event
		want Wait
		ok   bool
	}{
		{model.Event{Kind: "retry", Attempt: 2, Wait: 4 * time.Second, Error: "HTTP 503: overloaded"}, Wait{Retry: true, Attempt: 2, Reason: "HTTP 503: overloaded", Until: now.Add(4 * time.Second)}, true},
		{model.Event{Kind: "queued", Reason: "a free slot"}, Wait{Reason: "a free slot"}, true},
		{model.Event{Kind: "queued", Reason: "the tokens limit", Wait: time.Second}, Wait{Reason: "the tokens limit", Until: now.Add(time.Second)}, true},
		{model.Event{Kind: "paced", Wait: time.Second}, Wait{}, true},
		{model.Event{Kind: "response", Status: 200}, Wait{}, false},
	} {
		if got, ok := waitOf(c.e, now); got != c.want || ok != c.ok {
			t.Errorf("waitOf(%+v) = %+v, %v; want %+v, %v", c.e, got, ok, c.want, c.ok)
		}
	}
}
