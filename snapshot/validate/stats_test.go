package validate

import "testing"

// TestSignatureFoldsNumbersNotWords: numbers and hex ids fold to #, so texts that differ
// only in them are one signature; a word made only of hex letters (exceeded, decade, faced)
// is a word and stays.
func TestSignatureFoldsNumbersNotWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Deadline exceeded", "Deadline exceeded"},
		{`Status(StatusCode="DeadlineExceeded", Detail="")`, `Status(StatusCode="DeadlineExceeded", Detail="")`},
		{"a decade of accede, faced and added", "a decade of accede, faced and added"},
		{"4 DEADLINE_EXCEEDED: Deadline exceeded after 4.999s,LB pick: 0.001s", "# DEADLINE_EXCEEDED: Deadline exceeded after #.#s,LB pick: #.#s"},
		{"trace 4bf92f3577b34da6a3ce929d0e0e4736 failed", "trace # failed"},
		{"span deadbeef01 at offset=18231", "span # at offset=#"},
		{"pod cart-7d4b9c8f6-x2x9k restarted\nsecond line", "pod cart-#-x#x#k restarted"},
	} {
		if got := signature(c.in); got != c.want {
			t.Errorf("signature(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
