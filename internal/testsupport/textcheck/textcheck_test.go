package textcheck

import (
	"fmt"
	"strings"
	"testing"
)

// recorder is a testing.TB that keeps what a check reports.
type recorder struct {
	testing.TB
	errors, logs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recorder) Logf(format string, args ...any) {
	r.logs = append(r.logs, fmt.Sprintf(format, args...))
}

// TestEachPieceIsItsOwnFailure: every piece missing (Has) or present (Lacks) is named, and the
// text is shown once; a text that passes reports nothing.
func TestEachPieceIsItsOwnFailure(t *testing.T) {
	r := &recorder{TB: t}
	if Has(r, "the output", "alpha beta", "alpha", "gamma", "delta") {
		t.Error("Has passed with two pieces missing")
	}
	if got, want := strings.Join(r.errors, "\n"), "the output lacks \"gamma\"\nthe output lacks \"delta\""; got != want {
		t.Errorf("reported\n%s\nwant\n%s", got, want)
	}
	if len(r.logs) != 1 || !strings.Contains(r.logs[0], "alpha beta") {
		t.Errorf("showed %q, want the text once", r.logs)
	}

	r = &recorder{TB: t}
	if Lacks(r, "the output", "alpha beta", "beta", "gamma") {
		t.Error("Lacks passed with a piece present")
	}
	if got, want := strings.Join(r.errors, "\n"), "the output has \"beta\""; got != want {
		t.Errorf("reported\n%s\nwant\n%s", got, want)
	}

	r = &recorder{TB: t}
	if !Has(r, "the output", "alpha beta", "alpha", "beta") {
		t.Error("Has failed with every piece there")
	}
	if !Lacks(r, "the output", "alpha beta", "gamma") {
		t.Error("Lacks failed with no piece there")
	}
	if len(r.errors)+len(r.logs) != 0 {
		t.Errorf("a text that passes reported %q %q", r.errors, r.logs)
	}
}
