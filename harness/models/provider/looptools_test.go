package provider

import (
	"context"
	"net/http"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// TestLoopSendsOnlyItsTools: the providers of aa-grade's own loop send the request's tools
// alone (the shell and the finish), each as the API's client-side function tool, and no
// field that would have the provider run a tool itself (issue 42: the gateway holds agents
// to the same).
func TestLoopSendsOnlyItsTools(t *testing.T) {
	req := model.Request{Messages: []model.Message{{Role: model.RoleSystem, Content: "system"}, {Role: model.RoleUser, Content: "task"}}, Tools: responsesTools}
	for _, c := range []struct {
		name  string
		f     *fakeChat
		model func(f *fakeChat) model.Model
		tools string // where the function tools are
		check func(tool gjson.Result) bool
	}{
		{"Chat Completions", &fakeChat{answers: []func(http.ResponseWriter){status(200, toolAnswer)}},
			func(f *fakeChat) model.Model { return &OpenAIChat{testOptions(t, f)} }, "tools",
			func(tool gjson.Result) bool {
				return tool.Get("type").String() == "function" && tool.Get("function.parameters").IsObject()
			}},
		{"Responses", &fakeChat{path: "/v1/responses", answers: []func(http.ResponseWriter){status(200, responsesTextAnswer)}},
			func(f *fakeChat) model.Model { return &OpenAIResponses{testOptions(t, f)} }, "tools",
			func(tool gjson.Result) bool {
				return tool.Get("type").String() == "function" && tool.Get("parameters").IsObject()
			}},
		{"Messages", &fakeChat{path: "/v1/messages", answers: []func(http.ResponseWriter){anthropicReply(`[{"type":"text","text":"ok"}]`, 10)}},
			func(f *fakeChat) model.Model { return newAnthropic(t, f) }, "tools",
			func(tool gjson.Result) bool { return !tool.Get("type").Exists() && tool.Get("input_schema").IsObject() }},
		{"Gemini", &fakeChat{path: geminiPath, answers: []func(http.ResponseWriter){status(200, fakemodel.GeminiAnswer)}},
			func(f *fakeChat) model.Model { return newGemini(t, f) }, "tools.0.functionDeclarations",
			func(tool gjson.Result) bool { return tool.Get("name").Exists() }},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := c.model(c.f).Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if len(c.f.received) != 1 {
				t.Fatalf("%d requests sent, want 1", len(c.f.received))
			}
			body := gjson.ParseBytes(c.f.received[0])
			tools := body.Get(c.tools).Array()
			if len(tools) != len(req.Tools) {
				t.Errorf("%d tools sent, want the loop's %d: %s", len(tools), len(req.Tools), body.Get("tools").Raw)
			}
			for i, tool := range tools {
				if !c.check(tool) {
					t.Errorf("tool %d is no client-side function tool: %s", i, tool.Raw)
				}
			}
			if n := len(body.Get("tools").Array()); c.name == "Gemini" && n != 1 {
				t.Errorf("%d Gemini tool objects, want the one of function declarations", n)
			}
			for _, field := range []string{"mcp_servers", "container", "plugins", "web_search_options", "cachedContent", "prompt"} {
				if body.Get(field).Exists() {
					t.Errorf("the request holds %s", field)
				}
			}
		})
	}
}
