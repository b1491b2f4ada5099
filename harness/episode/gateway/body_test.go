package gateway

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestWithStreamUsage: a streamed Chat Completions call asks for its usage whatever its
// stream_options held, and keeps the rest of its body as it was.
func TestWithStreamUsage(t *testing.T) {
	for body, want := range map[string]string{
		`{"model":"m","stream":true}`:                                  `{"stream_options":{"include_usage":true},"model":"m","stream":true}`,
		` {"model":"m","stream_options":null}`:                         ` {"model":"m","stream_options":{"include_usage":true}}`,
		`{"model":"m","stream_options":{"include_usage":true}}`:        `{"model":"m","stream_options":{"include_usage":true}}`,
		`{"model":"m","stream_options":{"include_usage":false}}`:       `{"model":"m","stream_options":{"include_usage":true}}`,
		`{"model":"m","stream_options":{"include_obfuscation":false}}`: `{"model":"m","stream_options":{"include_obfuscation":false,"include_usage":true}}`,
	} {
		if got := string(withStreamUsage([]byte(body))); got != want {
			t.Errorf("%s: got %s, want %s", body, got, want)
		}
	}
}

// TestReplaceValue: the model's name is replaced where it stands, every other byte kept.
func TestReplaceValue(t *testing.T) {
	body := []byte(`{ "messages": [{"model": "inner"}], "model" : "claude-haiku", "x": 1 }`)
	got := replaceValue(body, gjson.GetBytes(body, "model"), `run"model`)
	if want := `{ "messages": [{"model": "inner"}], "model" : "run\"model", "x": 1 }`; string(got) != want {
		t.Errorf("got %s, want %s", got, want)
	}
}
