package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/runfolder"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// TestTrajectoryCountsRetriesAndNewMessages: wire events are written as they come and retries
// are counted; each turn records only the messages new since the previous call.
func TestTrajectoryCountsRetriesAndNewMessages(t *testing.T) {
	path := filepath.Join(t.TempDir(), "trajectory.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrajectory(f, func(err error) { t.Errorf("a write failed: %v", err) })
	sys, task := model.Message{Role: "system", Content: "s"}, model.Message{Role: "user", Content: "t"}
	reply := model.Message{Role: "assistant", Content: "a"}
	tr.wire(model.Event{Kind: "request"})
	tr.wire(model.Event{Kind: "retry", Attempt: 1})
	tr.wire(model.Event{Kind: "retry", Attempt: 2})
	tr.turn(1, model.Request{Messages: []model.Message{sys, task}}, model.Reply{Message: reply}, nil)
	result := model.Message{Role: "user", Content: "continue"}
	tr.turn(2, model.Request{Messages: []model.Message{sys, task, reply, result}}, model.Reply{Message: reply}, nil)
	if tr.retries != 2 {
		t.Errorf("%d retries counted, want 2", tr.retries)
	}
	if err := tr.close(); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(path)
	var turns []harness.TurnRecord
	for line := range strings.Lines(string(written)) {
		var r harness.TurnRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind == "turn" {
			turns = append(turns, r)
		}
	}
	if len(turns) != 2 || len(turns[0].Input) != 2 || len(turns[1].Input) != 1 || turns[1].Input[0].Content != "continue" {
		t.Fatalf("turns recorded: %+v", turns)
	}
}

// TestResumeKeepsTheRateLimits: a resume keeps in run.json the rate limits the run before
// recorded, until it records its own.
func TestResumeKeepsTheRateLimits(t *testing.T) {
	dir := t.TempDir()
	backend, err := sandbox.Select(sandbox.NameNone)
	if err != nil {
		t.Fatal(err)
	}
	s := model.LimitStatus{Limits: []model.LimitInForce{{Name: "tokens", Given: 300000, Learnt: 200000}}, Calls: 12, RateLimited: 1}
	for run := range 2 {
		f, err := runfolder.Open(dir)
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Folder: f, DatasetSpec: "demo", Repeats: 1, ModelSpec: "openai/m", Backend: backend, MaxTurns: 1}
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
	if err != nil || h.RateLimits == nil || fmt.Sprint(*h.RateLimits) != fmt.Sprint(s) {
		t.Fatalf("after a resume: %+v, %v", h.RateLimits, err)
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

// TestTrajectoryKeepsItsFirstFailure: a write that fails (a full disk, here /dev/full) is
// reported once, to the episode and at close, and nothing is written after it.
func TestTrajectoryKeepsItsFirstFailure(t *testing.T) {
	f, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skip(err)
	}
	var failures []error
	tr := newTrajectory(f, func(err error) { failures = append(failures, err) })
	tr.wire(model.Event{Kind: "request"})
	tr.turn(1, model.Request{}, model.Reply{}, nil)
	if len(failures) != 1 || !errors.Is(failures[0], ErrNotRecorded) || !errors.Is(failures[0], syscall.ENOSPC) {
		t.Fatalf("failures reported: %v", failures)
	}
	if err := tr.close(); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("close: %v", err)
	}
}
