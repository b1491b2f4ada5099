package runfolder

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsonschema"
)

// TestTrajectorySchema: a line of every kind, as the writer writes it, is valid against the
// published schema (trajectory.schema.json, docs/run-folder.md), and the schema refuses what
// no writer writes. The command tests validate the trajectories of real runs against it too.
func TestTrajectorySchema(t *testing.T) {
	s := jsonschema.MustCompileFile(t, "trajectory.schema.json")
	path := filepath.Join(t.TempDir(), TrajectoryFile)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrajectory(f, func(err error) { t.Errorf("a write failed: %v", err) })
	events := []model.Event{
		{Kind: model.KindQueued, Reason: "a free slot"},
		{Kind: model.KindQueued, Reason: "the tokens limit", Wait: time.Second},
		{Kind: model.KindPaced, Wait: 2 * time.Second},
		{Kind: model.KindRequest, URL: "https://api.example.com/v1/chat/completions", Header: map[string]string{"Authorization": "[REDACTED]"},
			Body: json.RawMessage(`{"model":"m","messages":[]}`)},
		{Kind: model.KindResponse, Status: 503, Body: json.RawMessage(`"upstream overloaded"`)},
		{Kind: model.KindThrottle, Status: 503, MaxInFlight: 2},
		{Kind: model.KindRetry, Attempt: 1, Wait: time.Second, Error: "HTTP 503: overloaded"},
		{Kind: model.KindResponse, Status: 200, Error: "the answer is longer than 64 MiB"},
		{Kind: model.KindNoUsage, Error: "the answer reports no token usage"},
		{Kind: model.KindDivergence, Error: "turn 1: message 2 (user) differs"},
	}
	for _, e := range events {
		tr.Event(e)
	}
	prompts := []model.Message{{Role: model.RoleSystem, Content: "s"}, {Role: model.RoleUser, Content: "t"}}
	call := model.Message{Role: model.RoleAssistant, Content: "looking", Opaque: json.RawMessage(`[{"type":"thinking"}]`),
		ToolCalls: []model.ToolCall{{ID: "c1", Name: "shell", Arguments: `{"cmd": "ls"}`}}}
	tr.Turn(1, model.Request{Messages: prompts}, model.Reply{Message: call, Usage: model.Usage{Input: 10, Output: 2}}, nil)
	result := model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "a b", IsError: true}
	tr.Turn(2, model.Request{Messages: append(append(prompts, call), result)}, model.Reply{}, errors.New("HTTP 500"))
	tr.Turn(3, model.Request{Messages: prompts, Summary: true}, model.Reply{Message: model.Message{Role: model.RoleAssistant}}, nil)
	tr.Unsent(3, nil) // no line
	tr.Unsent(3, []model.Message{result})
	tr.Agent(AgentRecord{Agent: "command:python3 a.py", ExitCode: 1, TimedOut: true, Duration: 12.5, Stdout: "…", StdoutChars: 30000, Stderr: "Traceback"})
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	written, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for line := range strings.Lines(string(written)) {
		if err := s.Validate([]byte(line)); err != nil {
			t.Errorf("%s: %v", strings.TrimSpace(line), err)
		}
		var e model.Event
		json.Unmarshal([]byte(line), &e)
		kinds[string(e.Kind)] = true
	}
	if len(kinds) != 11 {
		t.Errorf("the lines written have %d kinds, want the 11 of model.EventKind", len(kinds))
	}
	for _, bad := range []string{
		`{"kind":"retry","url":"https://x"}`,
		`{"kind":"agent","at":"2026-01-01T00:00:00Z","agent":"codex","exit_code":0,"duration_s":1,"stdout":"","stderr":""}`,
		`{"kind":"turn","turn":1,"at":"2026-01-01T00:00:00Z","input":[],"reply":{"role":"assistant"}}`,
		`{"kind":"turn","turn":1,"at":"2026-01-01T00:00:00Z","input":[],"reply":{"content":"no role"},"usage":{"input":0,"cached_read":0,"cached_write":0,"output":0,"reasoning":0}}`,
		`{"kind":"unsent","turn":3,"at":"2026-01-01T00:00:00Z"}`,
		`{"kind":"heartbeat"}`,
		`{"url":"https://x"}`,
	} {
		if s.Validate([]byte(bad)) == nil {
			t.Errorf("%s: valid, want refused", bad)
		}
	}
}
