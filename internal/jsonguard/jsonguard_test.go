package jsonguard

import (
	"strings"
	"testing"
)

func TestShallow(t *testing.T) {
	for doc, want := range map[string]bool{
		`{"a":[1,{"b":2}]}`: true,
		strings.Repeat("[", 10) + strings.Repeat("]", 10): true,
		strings.Repeat("[", 11) + strings.Repeat("]", 11): false,
		`["[[[[[[[[[[[[[[[[["]`:                           true, // brackets in a string
		`["\"[[[[[[[[[[[[[[[[["]`:                         true, // after an escaped quote
	} {
		if got := Shallow([]byte(doc), 10); got != want {
			t.Errorf("Shallow(%q) = %v, want %v", doc, got, want)
		}
	}
}

func TestClosingIndex(t *testing.T) {
	ok := strings.Repeat("[", 10) + strings.Repeat("]", 10)
	if end, _ := ClosingIndex([]byte(ok), 0, 10); end != len(ok) {
		t.Fatalf("depth 10: end %d, want %d", end, len(ok))
	}
	deep := "[" + ok + "]"
	if end, scanned := ClosingIndex([]byte(deep), 0, 10); end != -1 || scanned != 11 {
		t.Fatalf("depth 11: end %d after %d bytes, want -1 after 11", end, scanned)
	}
	if end, _ := ClosingIndex([]byte(`{"a":"}]\"}"} tail`), 0, 10); end != 13 {
		t.Fatalf("brackets inside strings: end %d, want 13", end)
	}
	if end, scanned := ClosingIndex([]byte(`x [1, [2]`), 2, 10); end != -1 || scanned != 7 {
		t.Fatalf("never closed: end %d after %d", end, scanned)
	}
}
