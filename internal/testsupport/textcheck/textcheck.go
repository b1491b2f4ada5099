// Package textcheck checks a test's text output piece by piece: each piece missing, or present
// where it must not be, is its own failure, where one compound condition (if !a || !b || c)
// would hide which failed.
package textcheck

import (
	"strings"
	"testing"
)

// Has reports, as an error of t, each of wants that text (named name in the failures) lacks,
// then shows text once; it says whether text has them all.
func Has(t testing.TB, name, text string, wants ...string) bool {
	t.Helper()
	return check(t, name, text, wants, false)
}

// Lacks reports, as an error of t, each of unwanted that text (named name in the failures)
// has, then shows text once; it says whether text has none of them.
func Lacks(t testing.TB, name, text string, unwanted ...string) bool {
	t.Helper()
	return check(t, name, text, unwanted, true)
}

func check(t testing.TB, name, text string, pieces []string, absent bool) bool {
	t.Helper()
	ok := true
	for _, p := range pieces {
		switch has := strings.Contains(text, p); {
		case has && absent:
			t.Errorf("%s has %q", name, p)
			ok = false
		case !has && !absent:
			t.Errorf("%s lacks %q", name, p)
			ok = false
		}
	}
	if !ok && strings.ContainsRune(text, '\x1b') {
		t.Logf("%s:\n%q", name, text) // quoted: its escape sequences would act on the terminal reading the log
	} else if !ok {
		t.Logf("%s:\n%s", name, text)
	}
	return ok
}
