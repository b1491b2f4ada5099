package main

import (
	"slices"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// TestRunStateCountsTheScoreAndCost: the episodes finished in earlier runs count as those of
// this one; the score is over the finished episodes (not those stopped unfinished); the cost
// is the ledger's (the folder's before, and each call since), partly known once a call's is
// not.
func TestRunStateCountsTheScoreAndCost(t *testing.T) {
	s := newRunState()
	cost := 1.5
	s.plan(4, []runfolder.Result{{Task: "Scenario-1", Repeat: 1, Score: 1, CostUSD: &cost}}, runfolder.Spend{Calls: 2, CostUSD: &cost})
	s.start(runfolder.Episode{Task: "Scenario-2", Repeat: 1}, time.Time{})
	s.charged(runfolder.Charge{Task: "Scenario-2", Repeat: 1, CostUSD: &cost})
	s.finish(runfolder.Result{Task: "Scenario-2", Repeat: 1, Score: 0.5, CostUSD: &cost, Status: "ok"})
	s.finish(runfolder.Result{Task: "Scenario-3", Repeat: 1, Status: "unfinished"})
	if s.finished != 3 {
		t.Errorf("%d finished, want 3", s.finished)
	}
	if len(s.running) != 0 {
		t.Errorf("%d running after the only running episode finished", len(s.running))
	}
	if s.scored != 2 {
		t.Errorf("%d scored, want 2 (the unfinished one is not)", s.scored)
	}
	if got, known := s.spent(); got != 3 || !known {
		t.Errorf("cost %g (known %v), want 3, known", got, known)
	}
	s.charged(runfolder.Charge{Task: "Scenario-4", Repeat: 1})
	if _, known := s.spent(); known {
		t.Error("the cost is known with a call of unknown cost")
	}
	unpriced := newRunState()
	unpriced.priced = false
	unpriced.plan(4, nil, runfolder.Spend{})
	if _, known := unpriced.spent(); known {
		t.Error("a run without prices spent a known $0 before its first call")
	}
}

// TestRunStateETA: no estimate before an episode ended here; then the episodes not started and
// what is left of the running ones at the mean time, over the most seen running at once (an
// episode past the mean needs a tenth of it more); none once all are finished.
func TestRunStateETA(t *testing.T) {
	s := newRunState()
	t0 := time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC)
	s.plan(10, nil, runfolder.Spend{})
	s.start(runfolder.Episode{Task: "Scenario-1", Repeat: 1}, t0)
	s.start(runfolder.Episode{Task: "Scenario-2", Repeat: 1}, t0)
	if left, ok := s.eta(t0.Add(time.Minute)); ok {
		t.Errorf("an estimate (%v) before any episode ended", left)
	}
	s.finish(runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Duration: 60})
	s.start(runfolder.Episode{Task: "Scenario-3", Repeat: 1}, t0.Add(time.Minute))
	// 7 not started x 60 s, Scenario-2 past the mean 6 s, Scenario-3 30 s; over 2 at once.
	if left, ok := s.eta(t0.Add(90 * time.Second)); !ok || left != 228*time.Second {
		t.Errorf("ETA %v (%v), want 3m48s", left, ok)
	}
	done := newRunState()
	done.plan(1, nil, runfolder.Spend{})
	done.finish(runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Duration: 60})
	if left, ok := done.eta(t0); ok {
		t.Errorf("an estimate (%v) with every episode finished", left)
	}
}

// TestRunStateWaits: a wait replaces the one before and says how long that lasted; a retry
// counts; the episodes waiting for a retry (until it goes) and for the rate limiter are
// counted apart; a turn ends the wait; an episode heard of before its start starts then.
func TestRunStateWaits(t *testing.T) {
	s := newRunState()
	t0 := time.Date(2026, 1, 1, 14, 0, 0, 0, time.UTC)
	one, two := runfolder.Episode{Task: "Scenario-1", Repeat: 1}, runfolder.Episode{Task: "Scenario-2", Repeat: 1}
	s.start(one, t0)
	limited := runner.Wait{Reason: "the tokens limit, 200000 a minute"}
	if was, _ := s.wait(one, limited, t0); was != (runner.Wait{}) {
		t.Errorf("the first wait replaced %+v", was)
	}
	retry := runner.Wait{Retry: true, Attempt: 1, Reason: "HTTP 503", Until: t0.Add(40 * time.Second)}
	was, lasted := s.wait(one, retry, t0.Add(30*time.Second))
	if was != limited || lasted != 30*time.Second {
		t.Errorf("the retry replaced %+v after %v, want the rate limiter's after 30s", was, lasted)
	}
	s.wait(two, limited, t0.Add(30*time.Second)) // never told started
	if e := s.running[two]; e == nil || !e.started.Equal(t0.Add(30*time.Second)) {
		t.Errorf("an episode first heard of waiting: %+v", e)
	}
	if r, l := s.waiting(t0.Add(35 * time.Second)); r != 1 || l != 1 {
		t.Errorf("%d waiting for a retry, %d for the rate limiter; want 1 and 1", r, l)
	}
	if r, _ := s.waiting(t0.Add(time.Minute)); r != 0 {
		t.Errorf("%d waiting for a retry whose time has come", r)
	}
	s.turn(runner.EpisodeTurn{Episode: two, Turn: 2, MaxTurns: 100, Command: "ls"}, t0.Add(time.Minute))
	if _, l := s.waiting(t0.Add(time.Minute)); l != 0 {
		t.Errorf("%d waiting for the rate limiter after their turn", l)
	}
	if e := s.running[one]; e.retries != 1 {
		t.Errorf("%d retries, want 1", e.retries)
	}
	if got := s.runningEpisodes(); !slices.Equal(got, []runfolder.Episode{one, two}) {
		t.Errorf("running %v, want %v", got, []runfolder.Episode{one, two})
	}
}

// TestRunStateNewWarnings: each of the rate limiter's warnings is new once.
func TestRunStateNewWarnings(t *testing.T) {
	s := newRunState()
	first := ratelimit.Status{Warnings: []string{"a"}}
	if got := s.newWarnings(first); !slices.Equal(got, []string{"a"}) {
		t.Errorf("new %q, want [a]", got)
	}
	if got := s.newWarnings(first); len(got) != 0 {
		t.Errorf("new again %q", got)
	}
	if got := s.newWarnings(ratelimit.Status{Warnings: []string{"a", "b"}}); !slices.Equal(got, []string{"b"}) {
		t.Errorf("new %q, want [b]", got)
	}
}
