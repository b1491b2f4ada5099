package model

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestParseField: a value that is JSON stays JSON, anything else becomes a JSON string; a
// missing = or key is refused.
func TestParseField(t *testing.T) {
	for arg, want := range map[string]string{"n=3": `3`, "x=true": `true`, `o={"a":[1]}`: `{"a":[1]}`, `s= { "a" : 1 }`: `{"a":1}`,
		"user=alice": `"alice"`, "empty=": `""`, `q="quoted"`: `"quoted"`, "eq=a=b": `"a=b"`} {
		_, got, err := ParseField(arg)
		if err != nil {
			t.Errorf("%s: %v", arg, err)
			continue
		}
		if string(got) != want {
			t.Errorf("%s: %s, want %s", arg, got, want)
		}
	}
	for _, bad := range []string{"novalue", "=1", " =1"} {
		if _, _, err := ParseField(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// TestParamsString: a fixed order whatever the maps', a value indented as run.json writes it
// on one line, and nothing for none.
func TestParamsString(t *testing.T) {
	temp := 0.5
	p := Params{Temperature: &temp, Fields: map[string]json.RawMessage{"b": json.RawMessage("{\n  \"c\": 2\n}"), "a": json.RawMessage(`"x"`)},
		Headers: map[string]string{"X-T": "v"}}
	if got, want := p.String(), `temperature=0.5 a="x" b={"c":2} header X-T=sha256:4c94485e0c21ae6c`; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if (Params{}).String() != "" || !(Params{}).IsZero() {
		t.Error("the zero Params say something")
	}
}

// TestParamsHeadersWritten: a header's value is never written, its SHA-256 is; read back, the
// params say the same as those given, and another value differs.
func TestParamsHeadersWritten(t *testing.T) {
	p := Params{Headers: map[string]string{"X-Route": "secret-token-123"}}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "secret-token-123") {
		t.Errorf("written: %s", b)
	}
	var back Params
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.IsZero() {
		t.Error("the params read back send nothing")
	}
	if back.String() != p.String() {
		t.Errorf("read back %q, given %q", back.String(), p.String())
	}
	other := Params{Headers: map[string]string{"X-Route": "another-token"}}
	if other.String() == back.String() {
		t.Errorf("another value reads as the same: %q", other.String())
	}
	again, err := json.Marshal(back)
	if err != nil {
		t.Fatal(err)
	}
	if string(again) != string(b) {
		t.Errorf("written again: %s, first %s", again, b)
	}
}
