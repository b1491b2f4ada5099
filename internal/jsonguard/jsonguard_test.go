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
