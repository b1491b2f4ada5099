package gateway

import (
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// TestGeminiCallIDs: a call reads with the same id in the answer and in the history an agent
// sends back, its arguments written otherwise, whether the history gives it no id or one of
// the agent's own making (the Gemini CLI's); its response answers it by that id, or by its
// place.
func TestGeminiCallIDs(t *testing.T) {
	reply, err := provider.ReadGeminiAnswer([]byte(fakemodel.GeminiAnswer))
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"", `,"id":"code_exec_1795790907550_0"`} {
		history := `{"contents":[{"role":"user","parts":[{"text":"task"}]},
		 {"role":"model","parts":[{"text":"Let me check the events."},{"functionCall":{"name":"code_exec","args":{"cmd":"grep -c Warning k8s_events_raw.tsv"}` + id + `}}]},
		 {"role":"user","parts":[{"functionResponse":{"name":"code_exec","response":{"output":"3"}` + id + `}}]}],
		 "systemInstruction":{"parts":[{"text":"be brief"}]},
		 "tools":[{"functionDeclarations":[{"name":"code_exec","description":"run","parameters":{"type":"OBJECT"}}]}]}`
		req, err := readGeminiRequest([]byte(history))
		if err != nil {
			t.Fatal(err)
		}
		if len(req.Messages) != 4 {
			t.Fatalf("messages %+v, want the system, the task, the call and its result", req.Messages)
		}
		if got := []string{req.Messages[0].Content, req.Messages[1].Content}; !slices.Equal(got, []string{"be brief", "task"}) {
			t.Errorf("the prompts %q", got)
		}
		sent, result := req.Messages[2], req.Messages[3]
		if sent.ToolCalls[0] != reply.Message.ToolCalls[0] || sent.Content != reply.Message.Content {
			t.Errorf("id %q: the call reads %+v in the history, %+v in the answer", id, sent.ToolCalls, reply.Message.ToolCalls)
		}
		if want := (model.Message{Role: model.RoleTool, ToolCallID: sent.ToolCalls[0].ID, Content: "3"}); !reflect.DeepEqual(result, want) {
			t.Errorf("id %q: the response %+v, want %+v", id, result, want)
		}
		if len(req.Tools) != 1 || string(req.Tools[0].Parameters) != `{"type":"OBJECT"}` {
			t.Errorf("tools %+v", req.Tools)
		}
	}
}

// TestGeminiStream: streamed chunks put together read as the answer would unstreamed: texts
// joined, thoughts apart, the call whole, the finish reason and the last usage; the chunk with
// the finish reason ends the stream.
func TestGeminiStream(t *testing.T) {
	chunks := []string{
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"The alerts ","thought":true}]},"index":0}],"usageMetadata":{"promptTokenCount":4050},"modelVersion":"gemini-test"}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"point at cart.","thought":true}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me "}]},"index":0}]}`,
		`{"candidates":[{"content":{"role":"model","parts":[{"text":"check the events."}]},"index":0}]}`,
		`not json`,
	}
	s := newGeminiStream()
	for _, c := range chunks {
		s.Add([]byte(c))
	}
	if s.Ended() {
		t.Fatal("the stream ended before its finish reason")
	}
	s.Add([]byte(`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"name":"code_exec","args":{"cmd":"grep -c Warning k8s_events_raw.tsv"}},"thoughtSignature":"sig-abc=="}]},"finishReason":"STOP","index":0}],` +
		`"usageMetadata":{"promptTokenCount":4050,"cachedContentTokenCount":3000,"candidatesTokenCount":120,"thoughtsTokenCount":40}}`))
	if !s.Ended() {
		t.Fatal("the finish reason did not end the stream")
	}
	streamed, err := provider.ReadGeminiAnswer(s.Answer())
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := provider.ReadGeminiAnswer([]byte(fakemodel.GeminiAnswer))
	streamed.Message.Opaque, whole.Message.Opaque = nil, nil
	if sj, wj := mustJSON(t, streamed), mustJSON(t, whole); sj != wj {
		t.Errorf("streamed %s\nwhole    %s", sj, wj)
	}
	if parts := gjson.GetBytes(s.Answer(), "candidates.0.content.parts").Array(); len(parts) != 3 || parts[0].Get("text").String() != "The alerts point at cart." {
		t.Errorf("parts %v", parts)
	}
	if v := gjson.GetBytes(s.Answer(), "modelVersion").String(); v != "gemini-test" {
		t.Errorf("modelVersion %q", v)
	}
	cut := newGeminiStream()
	cut.Add([]byte(`{"candidates":[{"content":{"parts":[{"text":"Let"}]},"finishReason":"MAX_TOKENS"}]}`))
	if r, _ := provider.ReadGeminiAnswer(cut.Answer()); !r.Cut || r.Message.Content != "Let" {
		t.Errorf("a stream cut at the output cap reads %+v", r)
	}
	failed := newGeminiStream()
	failed.Add([]byte(`{"error":{"code":500,"message":"internal","status":"INTERNAL"}}`))
	if !failed.Ended() {
		t.Error("an error chunk did not end the stream")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestReadGeminiRequestRefusesNoContents(t *testing.T) {
	if _, err := readGeminiRequest([]byte(`{"contents":"hi"}`)); err == nil || !strings.Contains(err.Error(), "no contents") {
		t.Errorf("err %v", err)
	}
}
