package jsoncheck

import (
	"fmt"
	"testing"

	"github.com/tidwall/gjson"
)

// recorder is a testing.TB that keeps its failures.
type recorder struct {
	testing.TB
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

// TestFields: equal fields pass, each differing or missing one is a failure of its own.
func TestFields(t *testing.T) {
	doc := gjson.Parse(`{"a":"x","b":{"c":false},"d":["e"]}`)
	r := &recorder{TB: t}
	Fields(r, "doc", doc, map[string]string{"a": "x", "b.c": "false", "d": `["e"]`})
	if len(r.failures) != 0 {
		t.Errorf("equal fields failed: %q", r.failures)
	}
	Fields(r, "doc", doc, map[string]string{"a": "y", "b.c": "false", "missing": "z"})
	want := []string{`doc: a is "x", want "y"`, `doc: missing is "", want "z"`}
	if fmt.Sprint(r.failures) != fmt.Sprint(want) {
		t.Errorf("failures %q, want %q", r.failures, want)
	}
}
