package provider

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/golden"
)

// canonicalEpisode is the one conversation every provider's golden requests are made of
// (testdata/requests): a system prompt and a task; the provider's own earlier reply, read from
// its answer, with what it kept to send back (reasoning, thinking, thought signatures) and
// each of its calls answered (a refusal for arguments that are not JSON); a call of the model
// whose arguments are not JSON and its refusal; a turn warning. The tools are the shell, its
// schema as pydantic writes it (titles, required, no other properties), and the finish tool.
func canonicalEpisode(reply model.Message) model.Request {
	messages := []model.Message{{Role: model.RoleSystem, Content: "You investigate a Kubernetes incident."},
		{Role: model.RoleUser, Content: "Find the root cause of the alerts."}, reply}
	for _, c := range reply.ToolCalls {
		messages = append(messages, result(c))
	}
	invalid := model.ToolCall{ID: "call_x", Name: "code_exec", Arguments: `{not json`}
	messages = append(messages, model.Message{Role: model.RoleAssistant, ToolCalls: []model.ToolCall{invalid}}, result(invalid),
		model.Message{Role: model.RoleUser, Content: "You have 20 turns left."})
	shell := json.RawMessage(`{"title":"CodeExecParams","type":"object","properties":{"cmd":{"title":"Cmd","type":"string"}},` +
		`"required":["cmd"],"additionalProperties":false}`)
	return model.Request{Messages: messages, Tools: []model.Tool{{Name: "code_exec", Description: "Run a shell command.", Parameters: shell},
		{Name: "finish", Description: "Submit the diagnosis.", Parameters: json.RawMessage(`{"type":"object"}`)}}}
}

// result is what the loop answers a call with: its command's output, or a refusal of
// arguments that are not JSON.
func result(c model.ToolCall) model.Message {
	if !json.Valid([]byte(c.Arguments)) {
		return model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: "Invalid arguments: not JSON.", IsError: true}
	}
	return model.Message{Role: model.RoleTool, ToolCallID: c.ID, Content: "<shell_results>3</shell_results>"}
}

// api is one provider's API as the golden requests are made with it: its answer to a call,
// the reader of that answer, and its provider calling f.
type api struct {
	name   string
	path   string
	answer string
	read   func([]byte) (model.Reply, error)
	model  func(t *testing.T, f *fakeChat, reference bool) model.Model
}

var apis = []api{
	{"chat", "/v1/chat/completions", toolAnswer, ReadChatAnswer, func(t *testing.T, f *fakeChat, reference bool) model.Model {
		m := &OpenAIChat{testOptions(t, f)}
		m.Reference = reference
		return m
	}},
	{"responses", "/v1/responses", responsesToolAnswer, ReadResponsesAnswer, func(t *testing.T, f *fakeChat, reference bool) model.Model {
		m := &OpenAIResponses{testOptions(t, f)}
		m.Reference = reference
		return m
	}},
	{"messages", "/v1/messages", anthropicAnswer, ReadAnthropicAnswer, func(t *testing.T, f *fakeChat, reference bool) model.Model {
		m := newAnthropic(t, f)
		m.Reference = reference
		return m
	}},
	{"gemini", geminiPath, fakemodel.GeminiAnswer, ReadGeminiAnswer, func(t *testing.T, f *fakeChat, reference bool) model.Model {
		m := newGemini(t, f)
		m.Reference = reference
		return m
	}},
}

// recordedRequest is a request as a golden file keeps it: where it went, its header as the
// trajectory records it (credentials redacted) and its body.
type recordedRequest struct {
	Path   string            `json:"path"`
	Header map[string]string `json:"header"`
	Body   json.RawMessage   `json:"body"`
}

// TestGoldenRequests: each provider, for each loop (the reference loop's client and the
// lenient loop's), sends the canonical episode as testdata/requests/API-LOOP.json has it
// (go test -update rewrites them): the request shapes of every API, side by side.
func TestGoldenRequests(t *testing.T) {
	for _, a := range apis {
		for _, loop := range []string{"reference", "lenient"} {
			t.Run(a.name+"/"+loop, func(t *testing.T) {
				earlier, err := a.read([]byte(a.answer))
				if err != nil {
					t.Fatal(err)
				}
				f := &fakeChat{path: a.path, answers: []func(http.ResponseWriter){status(200, a.answer)}}
				var events []model.Event
				if _, err := a.model(t, f, loop == "reference").Complete(recording(context.Background(), &events), canonicalEpisode(earlier.Message)); err != nil {
					t.Fatal(err)
				}
				if len(events) == 0 || events[0].Kind != model.KindRequest {
					t.Fatalf("events %s, want the request first", eventKinds(events))
				}
				u, err := url.Parse(events[0].URL)
				if err != nil {
					t.Fatal(err)
				}
				got, err := json.MarshalIndent(recordedRequest{Path: u.Path, Header: events[0].Header, Body: events[0].Body}, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				golden.Check(t, filepath.Join("testdata", "requests", a.name+"-"+loop+".json"), string(got)+"\n")
			})
		}
	}
}
