package provider

import (
	"encoding/json"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestReasoning reads reasoning from the Opaque each provider's parser writes, from real
// answer shapes: the text where there is one, hidden where it came only encrypted.
func TestReasoning(t *testing.T) {
	for name, c := range map[string]struct {
		parse  func([]byte) (json.RawMessage, error)
		answer string
		text   string
		hidden bool
	}{
		"anthropic": {anthropicOpaque, `{"content":[{"type":"thinking","thinking":"check the alerts","signature":"s"},{"type":"redacted_thinking","data":"x"},{"type":"text","text":"ok"}],"usage":{}}`,
			"check the alerts", true},
		"responses": {responsesOpaque, `{"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"**Plan**"}],"encrypted_content":"gAAA"},{"type":"reasoning","summary":[],"encrypted_content":"gBBB"},{"type":"message","content":[{"type":"output_text","text":"hi"}]}],"usage":{}}`,
			"**Plan**", true},
		"deepseek": {chatOpaque, `{"choices":[{"message":{"content":"hi","reasoning_content":"the pods restart"}}]}`, "the pods restart", false},
		"openrouter": {chatOpaque, `{"choices":[{"message":{"content":"hi","reasoning":"look at events","reasoning_details":[{"type":"reasoning.text","text":"look at events"}]}}]}`,
			"look at events", false},
		"openrouter encrypted": {chatOpaque, `{"choices":[{"message":{"content":"hi","reasoning_details":[{"type":"reasoning.encrypted","data":"zz"}]}}]}`, "", true},
		"none":                 {chatOpaque, `{"choices":[{"message":{"content":"hi"}}]}`, "", false},
		"gemini": {geminiOpaque, `{"candidates":[{"content":{"parts":[{"text":"the pods ","thought":true},{"text":"restart","thought":true},{"text":"hi","thoughtSignature":"s"}]}}]}`,
			"the pods restart", false},
		"gemini signature only": {geminiOpaque, `{"candidates":[{"content":{"parts":[{"functionCall":{"name":"x","args":{}},"thoughtSignature":"s"}]}}]}`, "", true},
	} {
		opaque, err := c.parse([]byte(c.answer))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if text, hidden := model.Reasoning(opaque); text != c.text || hidden != c.hidden {
			t.Errorf("%s: Reasoning = %q, hidden %v; want %q, %v", name, text, hidden, c.text, c.hidden)
		}
	}
}

func anthropicOpaque(b []byte) (json.RawMessage, error) {
	r, err := ReadAnthropicAnswer(b)
	return r.Message.Opaque, err
}

func responsesOpaque(b []byte) (json.RawMessage, error) {
	r, err := ReadResponsesAnswer(b)
	return r.Message.Opaque, err
}

func geminiOpaque(b []byte) (json.RawMessage, error) {
	r, err := ReadGeminiAnswer(b)
	return r.Message.Opaque, err
}

func chatOpaque(b []byte) (json.RawMessage, error) {
	r, err := ReadChatAnswer(b)
	return r.Message.Opaque, err
}
