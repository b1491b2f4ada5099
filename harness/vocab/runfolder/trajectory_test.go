package runfolder

import (
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestTrajectoryCompression: a finished episode's trajectory is compressed in place, reads back
// the same, and a plain one (an episode still running) reads as it is.
func TestTrajectoryCompression(t *testing.T) {
	dir := t.TempDir()
	content := strings.Repeat(`{"kind":"request","body":{"messages":["the same conversation again"]}}`+"\n", 500)
	os.WriteFile(filepath.Join(dir, TrajectoryFile), []byte(content), 0o644)
	read := func() string {
		f, err := OpenTrajectory(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		b, err := io.ReadAll(f)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	if read() != content {
		t.Fatal("the plain trajectory reads differently")
	}
	if err := CompressTrajectory(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, TrajectoryFile)); !os.IsNotExist(err) {
		t.Errorf("the plain file is still there: %v", err)
	}
	info, err := os.Stat(filepath.Join(dir, TrajectoryFile+".zst"))
	if err != nil || info.Size()*20 > int64(len(content)) {
		t.Fatalf("compressed: %v, %v bytes for %d", err, info, len(content))
	}
	if read() != content {
		t.Fatal("the compressed trajectory reads differently")
	}
	if err := CompressTrajectory(t.TempDir()); err == nil {
		t.Error("compressing a folder without a trajectory succeeded")
	}
}

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
	tr.Event(model.Event{Kind: "request"})
	tr.Event(model.Event{Kind: "retry", Attempt: 1})
	tr.Event(model.Event{Kind: "retry", Attempt: 2})
	tr.Turn(1, model.Request{Messages: []model.Message{sys, task}}, model.Reply{Message: reply}, nil)
	result := model.Message{Role: "user", Content: "continue"}
	tr.Turn(2, model.Request{Messages: []model.Message{sys, task, reply, result}}, model.Reply{Message: reply}, nil)
	if tr.Retries() != 2 {
		t.Errorf("%d retries counted, want 2", tr.Retries())
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	written, _ := os.ReadFile(path)
	var turns []TurnRecord
	for line := range strings.Lines(string(written)) {
		var r TurnRecord
		if json.Unmarshal([]byte(line), &r) == nil && r.Kind == "turn" {
			turns = append(turns, r)
		}
	}
	if len(turns) != 2 {
		t.Fatalf("%d turns recorded, want 2: %+v", len(turns), turns)
	}
	if n := len(turns[0].Input); n != 2 {
		t.Errorf("turn 1 recorded with %d input messages, want 2", n)
	}
	if len(turns[1].Input) != 1 {
		t.Errorf("turn 2 recorded with input %+v, want one message", turns[1].Input)
	} else if c := turns[1].Input[0].Content; c != "continue" {
		t.Errorf("turn 2's input %q, want continue", c)
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
	tr.Event(model.Event{Kind: "request"})
	tr.Turn(1, model.Request{}, model.Reply{}, nil)
	if len(failures) != 1 {
		t.Fatalf("failures reported: %v, want one", failures)
	}
	if !errors.Is(failures[0], ErrNotRecorded) {
		t.Errorf("the failure %v is not ErrNotRecorded", failures[0])
	}
	if !errors.Is(failures[0], syscall.ENOSPC) {
		t.Errorf("the failure %v does not wrap ENOSPC", failures[0])
	}

	if err := tr.Close(); !errors.Is(err, ErrNotRecorded) {
		t.Errorf("close: %v", err)
	}
}

// TestNewMessagesConversations: a summary restarts the conversation after its prompts, a
// shortened history counts from its prompts, and an agent's side call (other prompts) is a
// conversation of its own, every message new, which leaves the investigation's where it was.
func TestNewMessagesConversations(t *testing.T) {
	msg := func(role, text string) model.Message { return model.Message{Role: role, Content: text} }
	sys, task, reply, result := msg("system", "s"), msg("user", "t"), msg("assistant", "a"), msg("tool", "r")
	title := []model.Message{msg("system", "Write a title"), msg("user", "t")}
	var n NewMessages
	contents := func(ms []model.Message) string {
		var s []string
		for _, m := range ms {
			s = append(s, m.Content)
		}
		return strings.Join(s, ",")
	}
	for i, step := range []struct {
		req    model.Request
		failed bool
		want   string
	}{
		{model.Request{Messages: []model.Message{sys, task}}, false, "s,t"},
		{model.Request{Messages: title}, false, "Write a title,t"},                       // a side call
		{model.Request{Messages: []model.Message{sys, task, reply, result}}, false, "r"}, // the investigation goes on
		{model.Request{Messages: title}, false, ""},                                      // the same side call again: nothing new
		{model.Request{Messages: []model.Message{sys, task, reply, result, reply, msg("tool", "r2")}}, true, "r2"},
		{model.Request{Messages: []model.Message{sys, task, reply, result, reply, msg("tool", "r2")}}, false, ""}, // tried again
		{model.Request{Messages: []model.Message{sys, task, msg("user", "older turns, summarised")}}, false, "older turns, summarised"},
		{model.Request{Messages: []model.Message{sys, task, msg("user", "older turns, summarised"), reply, msg("user", "summarise"), msg("user", "go on")}, Summary: true}, false, "summarise,go on"},
		{model.Request{Messages: []model.Message{sys, task, msg("user", "summary")}}, false, "summary"},
	} {
		if got := contents(n.Next(step.req, step.failed)); got != step.want {
			t.Errorf("call %d: new %q, want %q", i+1, got, step.want)
		}
	}
}

// TestNewTrajectoryReplacesTheEarlierAttempts: a new attempt's trajectory is the one read, not
// the compressed one of the attempt before it; an earlier one that cannot be removed (here a
// folder in its place, holding a file) fails the new attempt rather than being read for it.
func TestNewTrajectoryReplacesTheEarlierAttempts(t *testing.T) {
	f := &Folder{Dir: t.TempDir()}
	e := Episode{Task: "Scenario-1", Repeat: 1}
	dir, err := f.NewEpisode(e)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, TrajectoryFile), []byte("{\"attempt\":1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := CompressTrajectory(dir); err != nil {
		t.Fatal(err)
	}
	tr, err := f.NewTrajectory(e, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := OpenTrajectory(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(b) != 0 {
		t.Errorf("the new attempt reads as the earlier one: %q", b)
	}

	stuck := filepath.Join(dir, TrajectoryFile+".zst")
	if err := os.MkdirAll(filepath.Join(stuck, "kept"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewTrajectory(e, nil); err == nil {
		t.Error("a new attempt began beside an earlier trajectory it could not remove")
	}
}
