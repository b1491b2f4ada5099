package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestAnthropicReferenceEffort: with Reference a reasoning effort becomes what LiteLLM 1.80.9
// makes of it for the model: Claude Opus 4.5 (its name holding opus-4-5 or opus_4_5, in any
// case) output_config's effort, no thinking, the effort beta header; any other model thinking
// with the effort's budget (minimal 128, low 1024, medium 2048, high 4096). An effort LiteLLM
// refuses, and every effort in the lenient loop, asks for adaptive thinking and
// output_config's effort, with no beta header; no effort asks for nothing.
func TestAnthropicReferenceEffort(t *testing.T) {
	adaptive := func(effort string) string {
		return fmt.Sprintf(`{"thinking":{"type":"adaptive"},"output_config":{"effort":%q}}`, effort)
	}
	for _, c := range []struct {
		model, effort string
		reference     bool
		want, beta    string
	}{
		{"claude-sonnet-4-5-20250929", "minimal", true, `{"thinking":{"type":"enabled","budget_tokens":128}}`, ""},
		{"claude-sonnet-4-5-20250929", "low", true, `{"thinking":{"type":"enabled","budget_tokens":1024}}`, ""},
		{"claude-opus-4-7", "medium", true, `{"thinking":{"type":"enabled","budget_tokens":2048}}`, ""},
		{"claude-opus-4-1", "high", true, `{"thinking":{"type":"enabled","budget_tokens":4096}}`, ""},
		{"claude-opus-4-5-20251101", "high", true, `{"output_config":{"effort":"high"}}`, LiteLLMEffortBeta},
		{"Claude-Opus-4-5", "low", true, `{"output_config":{"effort":"low"}}`, LiteLLMEffortBeta},
		{"claude_opus_4_5", "medium", true, `{"output_config":{"effort":"medium"}}`, LiteLLMEffortBeta},
		{"claude-opus-4-5-20251101", "minimal", true, adaptive("minimal"), ""},
		{"claude-opus-4-7", "max", true, adaptive("max"), ""},
		{"claude-sonnet-4-5", "xhigh", true, adaptive("xhigh"), ""},
		{"claude-sonnet-4-5", "high", false, adaptive("high"), ""},
		{"claude-opus-4-5-20251101", "high", false, adaptive("high"), ""},
		{"claude-opus-4-5-20251101", "", true, `{}`, ""},
	} {
		name := c.model + "/" + c.effort
		if !c.reference {
			name += "/lenient"
		}
		t.Run(name, func(t *testing.T) {
			api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
			m := newAnthropic(t, api)
			m.Model, m.ReasoningEffort, m.Reference = c.model, c.effort, c.reference
			if _, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}}); err != nil {
				t.Fatal(err)
			}
			sent := gjson.ParseBytes(api.received[0])
			got := map[string]json.RawMessage{}
			for _, key := range []string{"thinking", "output_config"} {
				if v := sent.Get(key); v.Exists() {
					got[key] = json.RawMessage(v.Raw)
				}
			}
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			if !sameJSON(t, string(b), c.want) {
				t.Errorf("the request asks for %s, want %s", b, c.want)
			}
			if beta := api.headers[0].Get("anthropic-beta"); beta != c.beta {
				t.Errorf("anthropic-beta %q, want %q", beta, c.beta)
			}
		})
	}
}

// TestAnthropicHeaders: every request, in both loops, says it accepts JSON, as LiteLLM's
// get_anthropic_headers does, beside the key, the version and the content type.
func TestAnthropicHeaders(t *testing.T) {
	for _, reference := range []bool{true, false} {
		api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
		m := newAnthropic(t, api)
		m.Reference = reference
		if _, err := m.Complete(context.Background(), model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"}}}); err != nil {
			t.Fatal(err)
		}
		for key, want := range map[string]string{"Accept": "application/json", "Content-Type": "application/json",
			"Anthropic-Version": AnthropicVersion, "X-Api-Key": testKey} {
			if got := api.headers[0].Get(key); got != want {
				t.Errorf("reference %v: %s %q, want %q", reference, key, got, want)
			}
		}
	}
}

// TestAnthropicReferenceKeepsBlankText: with Reference a reply whose text is white space
// alone goes back as a text block, as LiteLLM's anthropic_messages_pt keeps any text that is
// not empty, and the API refuses the request (a 400, which ended the reference's episode);
// the lenient loop leaves the block out and the request is taken. An empty text is left out
// by both.
func TestAnthropicReferenceKeepsBlankText(t *testing.T) {
	call := model.ToolCall{ID: "toolu_a", Name: "code_exec", Arguments: `{"cmd":"ls"}`}
	request := func(text string) model.Request {
		opaque := `[{"type":"text","text":` + strconv.Quote(text) + `},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}}]`
		return model.Request{Messages: []model.Message{{Role: model.RoleUser, Content: "task"},
			{Role: model.RoleAssistant, Opaque: json.RawMessage(opaque), ToolCalls: []model.ToolCall{call}},
			{Role: model.RoleTool, ToolCallID: "toolu_a", Content: "out"}}}
	}
	for _, c := range []struct {
		text      string
		reference bool
		want      string
	}{
		{"\n\n", true, `[{"type":"text","text":"\n\n"},{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}}]`},
		{"\n\n", false, `[{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}}]`},
		{"", true, `[{"type":"tool_use","id":"toolu_a","name":"code_exec","input":{"cmd":"ls"}}]`},
	} {
		api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
		m := newAnthropic(t, api)
		m.Reference, m.ReasoningEffort = c.reference, ""
		var events []model.Event
		_, err := m.Complete(recording(context.Background(), &events), request(c.text))
		if len(events) == 0 || events[0].Kind != model.KindRequest {
			t.Fatalf("events %s, want the request first", eventKinds(events))
		}
		if got := gjson.GetBytes(events[0].Body, "messages.1.content").Raw; !sameJSON(t, got, c.want) {
			t.Errorf("text %q, reference %v: the reply went back as %s, want %s", c.text, c.reference, got, c.want)
		}
		refused := c.text != "" && c.reference // white space alone, kept
		if got := err != nil; got != refused {
			t.Errorf("text %q, reference %v: refused %v (%v), want %v", c.text, c.reference, got, err, refused)
		}
	}
}

// TestAnthropicEmptySystemLeftOut: an empty system prompt is left out, and with none the
// request has no system key, as LiteLLM's translate_system_message does (the API refuses an
// empty text block); a system prompt goes as a text block.
func TestAnthropicEmptySystemLeftOut(t *testing.T) {
	for _, c := range []struct {
		system []model.Message
		want   string
	}{
		{nil, ""},
		{[]model.Message{{Role: model.RoleSystem, Content: ""}}, ""},
		{[]model.Message{{Role: model.RoleSystem, Content: "s"}}, `["s"]`},
	} {
		for _, reference := range []bool{true, false} {
			api := newAnthropicAPI(anthropicReply(`[{"type":"text","text":"ok"}]`, 10))
			m := newAnthropic(t, api)
			m.Reference = reference
			req := model.Request{Messages: append(c.system, model.Message{Role: model.RoleUser, Content: "task"})}
			if _, err := m.Complete(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			if got := gjson.GetBytes(api.received[0], "system.#.text").Raw; got != c.want {
				t.Errorf("system %+v, reference %v: sent %s, want %s", c.system, reference, got, c.want)
			}
			if system := gjson.GetBytes(api.received[0], "system"); c.want == "" && system.Exists() {
				t.Errorf("system %+v, reference %v: sent the key system: %s", c.system, reference, system.Raw)
			}
		}
	}
}
