package english

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 repeats", 1: "1 repeat", 2: "2 repeats", 300: "300 repeats"} {
		if got := Count(n, "repeat"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}
