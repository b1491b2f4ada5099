package settings

import (
	"encoding/json"
	"errors"
	"testing"
	"time"
)

// TestDurationJSON: a duration is written as Go writes durations, as run.json always held the
// command timeout, and read back; "" reads as 0, and what is no duration is an error.
func TestDurationJSON(t *testing.T) {
	b, err := json.Marshal(Duration(5 * time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != `"5m0s"` {
		t.Errorf("written as %s, want \"5m0s\"", b)
	}
	var d Duration
	if err := json.Unmarshal([]byte(`"1m30s"`), &d); err != nil {
		t.Fatal(err)
	}
	if d != Duration(90*time.Second) {
		t.Errorf("read %v, want 1m30s", d)
	}
	if err := json.Unmarshal([]byte(`""`), &d); err != nil {
		t.Errorf(`"": %v`, err)
	}
	if d != 0 {
		t.Errorf(`"" read as %v, want 0`, d)
	}
	if err := json.Unmarshal([]byte(`"five minutes"`), &d); err == nil {
		t.Error("no duration read without an error")
	}
}

// TestParseLoop: "" is the reference loop, each loop reads by its name, and any other name is
// ErrUnknownLoop.
func TestParseLoop(t *testing.T) {
	if l, err := ParseLoop(""); err != nil || l != LoopReference {
		t.Errorf(`"": %q, %v`, l, err)
	}
	for _, want := range Loops {
		if l, err := ParseLoop(string(want)); err != nil || l != want {
			t.Errorf("%s: %q, %v", want, l, err)
		}
	}
	if _, err := ParseLoop("strict"); !errors.Is(err, ErrUnknownLoop) {
		t.Errorf("strict: %v", err)
	}
}
