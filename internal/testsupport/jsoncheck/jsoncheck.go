// Package jsoncheck checks fields of a JSON document in tests, one failure per field that
// differs, so that a test of many fields says which ones are wrong.
package jsoncheck

import (
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// Fields checks each path of doc (gjson's syntax) against its want: a string's text, any
// other value as its JSON ("false", `["a"]`); a path doc lacks reads as "". what names the
// document in the failures.
func Fields(t testing.TB, what string, doc gjson.Result, want map[string]string) {
	t.Helper()
	paths := make([]string, 0, len(want))
	for path := range want {
		paths = append(paths, path)
	}
	slices.Sort(paths) // failures in a stable order
	for _, path := range paths {
		if got := doc.Get(path).String(); got != want[path] {
			t.Errorf("%s: %s is %q, want %q", what, path, got, want[path])
		}
	}
}
