package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

var (
	prompts    = []model.Message{{Role: model.RoleSystem, Content: "You investigate."}, {Role: model.RoleUser, Content: "Find the cause."}}
	theEpisode = runfolder.Episode{Task: "Scenario-1", Repeat: 1}
)

// recordRun writes a run folder of one episode whose model calls are calls (each the whole
// request and its reply, or an error), with no_usage before the calls listed in unreported.
func recordRun(t *testing.T, calls []recordedCall, unreported map[int]bool) *runfolder.Run {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	f, err := runfolder.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := runfolder.Header{Version: "v9.9.9", Dataset: "demo", Tasks: []string{"Scenario-1"}, Repeats: 1, Model: "openai/m",
		Started: time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC), Prices: &model.Prices{Input: 1, Output: 2}}
	if err := f.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if _, err := f.NewEpisode(theEpisode); err != nil {
		t.Fatal(err)
	}
	tr, err := f.NewTrajectory(theEpisode, func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	tr.Event(model.Event{Kind: model.KindRequest, URL: "https://x/v1/messages", Body: json.RawMessage(
		`{"tools":[{"name":"shell","description":"Runs a command.","input_schema":{"type":"object"}}]}`)})
	for i, c := range calls {
		if unreported[i] {
			tr.Event(model.Event{Kind: model.KindNoUsage, Error: "no usage"})
		}
		tr.Turn(i+1, c.req, c.reply, c.err)
	}
	if err := tr.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.WriteSubmission(theEpisode, []byte(`{"contributing_factors": [{"name": "ns/Service/a"}]}`)); err != nil {
		t.Fatal(err)
	}
	if err := f.Append(runfolder.Result{Task: "Scenario-1", Repeat: 1, Status: "ok", Score: 1, Tokens: model.Usage{Input: 30, Output: 6}}); err != nil {
		t.Fatal(err)
	}
	run, err := runfolder.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

type recordedCall struct {
	req   model.Request
	reply model.Reply
	err   error
}

// TestATIFOfAnAwkwardEpisode: ids a model left out or gave twice, arguments that are not JSON,
// a call that failed, an answer without usage, a summary call and a result that answers no
// call recorded all make a valid document that keeps what each was.
func TestATIFOfAnAwkwardEpisode(t *testing.T) {
	first := model.Message{Role: model.RoleAssistant, Content: "Two looks.", ToolCalls: []model.ToolCall{
		{ID: "", Name: "shell", Arguments: `{"cmd": "ls"}`},
		{ID: "", Name: "shell", Arguments: `{"cmd": "cat x`},
	}, Opaque: json.RawMessage(`{"reasoning_content": "Start with ls."}`)}
	results := []model.Message{{Role: model.RoleTool, Content: "a b", ToolCallID: ""}, {Role: model.RoleTool, Content: "invalid arguments", ToolCallID: "", IsError: true}}
	second := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c", Name: "shell", Arguments: `{"cmd": "ls"}`}, {ID: "c", Name: "shell", Arguments: `{"cmd": "pwd"}`}}}
	conv := append(append(append([]model.Message(nil), prompts...), first), results...)
	conv2 := append(append(conv, second), model.Message{Role: model.RoleTool, ToolCallID: "c", Content: "x"},
		model.Message{Role: model.RoleTool, ToolCallID: "c", Content: "/w"}, model.Message{Role: model.RoleTool, ToolCallID: "gone", Content: "?"})
	run := recordRun(t, []recordedCall{
		{req: model.Request{Messages: prompts}, reply: model.Reply{Message: first, Usage: model.Usage{Input: 10, Output: 2}}},
		{req: model.Request{Messages: conv}, err: errors.New("HTTP 500: overloaded")},
		{req: model.Request{Messages: conv}, reply: model.Reply{Message: second, Usage: model.Usage{Input: 20, CachedRead: 5, Output: 4}}},
		{req: model.Request{Messages: append(conv2, model.Message{Role: model.RoleUser, Content: "Summarise."}), Summary: true},
			reply: model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "So far: ls."}}},
	}, map[int]bool{3: true})
	doc, err := ATIF(run, theEpisode)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var resultsOf = map[string]string{}
	for _, s := range doc.Steps {
		for _, c := range s.ToolCalls {
			ids = append(ids, c.ToolCallID)
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				resultsOf[r.SourceCallID] += string(*r.Content)
			}
		}
	}
	b, _ := json.Marshal(doc)
	if len(ids) != 4 {
		t.Fatalf("tool call ids %q, want 4", ids)
	}
	if ids[0] == ids[1] {
		t.Errorf("tool call ids %q: the first two are the same", ids)
	}
	if ids[2] != "c" {
		t.Errorf("tool call ids %q: the third is not c, the model's own", ids)
	}
	if ids[3] == "c" {
		t.Errorf("tool call ids %q: the fourth reuses c", ids)
	}
	for i, want := range map[string]string{ids[0]: "a b", ids[1]: "invalid arguments", "c": "x", ids[3]: "/w"} {
		if resultsOf[i] != want {
			t.Errorf("the result of call %s is %q, want %q", i, resultsOf[i], want)
		}
	}
	for _, want := range []string{`"arguments":"{\"cmd\": \"cat x"`, `"error":"HTTP 500: overloaded"`, `"usage":"not reported"`,
		`"summary":true`, `"tool_call_id":"gone"`, `"reasoning_content":"Start with ls."`, `"is_error":true`,
		`"tool_definitions":[{"function":{"description":"Runs a command.","name":"shell","parameters":{"type":"object"}},"type":"function"}]`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the document lacks %s:\n%s", want, b)
		}
	}
	m := doc.FinalMetrics
	if *m.TotalPromptTokens != 30 {
		t.Errorf("final metrics: %d prompt tokens, want 30", *m.TotalPromptTokens)
	}
	if *m.TotalCachedTokens != 5 {
		t.Errorf("final metrics: %d cached tokens, want 5", *m.TotalCachedTokens)
	}
	if n := m.Extra["calls_without_usage"]; n != 1 {
		t.Errorf("final metrics: calls_without_usage %v, want 1", n)
	}
	if last := doc.Steps[len(doc.Steps)-1]; last.Source != atif.SourceSystem || last.Observation.Results[0].Extra[atif.ExtraPath] != grader.SubmissionFile {
		t.Errorf("last step %+v", last)
	}
	if d, where, ok := atif.Diagnosis(doc); !ok || !strings.Contains(string(d), "ns/Service/a") {
		t.Errorf("the export's diagnosis: %q at %s", d, where)
	}
}

// TestChatOfAnEpisode: the chat messages are every message once, in order, a failed call's
// empty reply left out; an episode with no folder or no trajectory is ErrNoTrajectory.
func TestChatOfAnEpisode(t *testing.T) {
	reply := model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{{ID: "c1", Name: "shell", Arguments: `{"cmd":"ls"}`}}}
	conv := append(append(append([]model.Message(nil), prompts...), reply), model.Message{Role: model.RoleTool, ToolCallID: "c1", Content: "a"})
	run := recordRun(t, []recordedCall{
		{req: model.Request{Messages: prompts}, reply: model.Reply{Message: reply}},
		{req: model.Request{Messages: conv}, err: errors.New("HTTP 500")},
		{req: model.Request{Messages: conv}, reply: model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "done"}}},
	}, nil)
	c, err := Chat(run, theEpisode)
	if err != nil {
		t.Fatal(err)
	}
	if got := roles(c); got != "system,user,assistant,tool,assistant" {
		t.Fatalf("roles %s, want system,user,assistant,tool,assistant; messages %+v", got, c.Messages)
	}
	if got := c.Messages[2].ToolCalls[0].Function.Arguments; got != `{"cmd":"ls"}` {
		t.Errorf("the call's arguments %s, want {\"cmd\":\"ls\"}", got)
	}
	if len(c.Tools) != 1 {
		t.Errorf("%d tools, want 1: %+v", len(c.Tools), c.Tools)
	}

	os.Remove(filepath.Join(runfolder.EpisodeDir(run.Dir, theEpisode), runfolder.TrajectoryFile))
	if _, err := Chat(run, theEpisode); !errors.Is(err, ErrNoTrajectory) {
		t.Errorf("no trajectory: %v", err)
	}
	if _, err := ATIF(run, runfolder.Episode{Task: "Scenario-1", Repeat: 2}); !errors.Is(err, ErrNoTrajectory) {
		t.Errorf("no episode folder: %v", err)
	}
}

// TestChatReadsBack: the chat messages of an episode whose replies were recorded with no role
// (builtin/baseline's, and replays of its runs), whose calls have no id or one id twice, and
// whose recording holds a result of a call it does not hold, are what a reader that checks
// them as the Chat Completions API does takes: every message has its role, every call an id
// unique in the line, every tool result answers a call of the assistant message before it.
func TestChatReadsBack(t *testing.T) {
	first := model.Message{ToolCalls: []model.ToolCall{{Name: "shell", Arguments: `{"cmd":"ls"}`}, {Name: "shell", Arguments: `{"cmd":"pwd"}`}}}
	conv := append(append([]model.Message(nil), prompts...), first,
		model.Message{Role: model.RoleTool, Content: "a"}, model.Message{Role: model.RoleTool, Content: "/w"})
	second := model.Message{ToolCalls: []model.ToolCall{{ID: "c", Name: "shell", Arguments: `{}`}, {ID: "c", Name: "shell", Arguments: `{}`}}}
	conv2 := append(append(conv, second), model.Message{Role: model.RoleTool, ToolCallID: "c", Content: "x"},
		model.Message{Role: model.RoleTool, ToolCallID: "c", Content: "y"}, model.Message{Role: model.RoleTool, ToolCallID: "gone", Content: "?"})
	run := recordRun(t, []recordedCall{
		{req: model.Request{Messages: prompts}, reply: model.Reply{Message: first}},
		{req: model.Request{Messages: conv}, reply: model.Reply{Message: second}},
		{req: model.Request{Messages: conv2}, reply: model.Reply{Message: model.Message{Content: "done"}}},
	}, nil)
	c, err := Chat(run, theEpisode)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := roles(c), "system,user,assistant,tool,tool,assistant,tool,tool,user,assistant"; got != want {
		t.Fatalf("roles %s, want %s", got, want)
	}
	if problem := chatProblem(c.Messages); problem != "" {
		t.Errorf("%s: %+v", problem, c.Messages)
	}
	if got := c.Messages[8].Content; got != "?" {
		t.Errorf("the result of no call became %q, want its text", got)
	}
	if got := c.Messages[6].ToolCallID; got != "c" {
		t.Errorf("the first result of c answers %q, want the model's own id c", got)
	}
}

// chatProblem is what a reader that checks chat messages as the Chat Completions API does
// refuses in msgs, or "": a role it does not know, a call id given twice, a tool result that
// answers no call of the assistant message before it (or one already answered).
func chatProblem(msgs []ChatMessage) string {
	used, open := map[string]bool{}, map[string]bool{}
	for i, m := range msgs {
		switch m.Role {
		case model.RoleSystem, model.RoleUser:
		case model.RoleAssistant:
			clear(open)
			for _, c := range m.ToolCalls {
				if used[c.ID] {
					return fmt.Sprintf("message %d: the call id %q was given before", i, c.ID)
				}
				used[c.ID], open[c.ID] = true, true
			}
		case model.RoleTool:
			if !open[m.ToolCallID] {
				return fmt.Sprintf("message %d: the tool result answers %q, no open call", i, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		default:
			return fmt.Sprintf("message %d: the role %q", i, m.Role)
		}
	}
	return ""
}

// TestATIFOfACorruptTrajectory: a turn line that is not a record is an error naming the file
// and the line.
func TestATIFOfACorruptTrajectory(t *testing.T) {
	run := recordRun(t, []recordedCall{{req: model.Request{Messages: prompts}, reply: model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: "x"}}}}, nil)
	path := filepath.Join(runfolder.EpisodeDir(run.Dir, theEpisode), runfolder.TrajectoryFile)
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"kind":"turn","turn":"two"}` + "\n")
	f.Close()
	if _, err := ATIF(run, theEpisode); err == nil || !strings.Contains(err.Error(), path+":3") {
		t.Errorf("err = %v", err)
	}
}

// TestEpisodeWithoutCalls: an episode whose trajectory records no model call has nothing to
// export in either format.
func TestEpisodeWithoutCalls(t *testing.T) {
	run := recordRun(t, nil, nil) // with a submission
	if _, err := ATIF(run, theEpisode); !errors.Is(err, ErrNoTrajectory) {
		t.Errorf("ATIF: %v", err)
	}
	if _, err := Chat(run, theEpisode); !errors.Is(err, ErrNoTrajectory) {
		t.Errorf("Chat: %v", err)
	}
}

// roles is the roles of an episode's messages, in order, comma-separated.
func roles(c ChatEpisode) string {
	var out []string
	for _, m := range c.Messages {
		out = append(out, m.Role)
	}
	return strings.Join(out, ",")
}
