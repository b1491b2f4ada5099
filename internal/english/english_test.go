package english

import "testing"

func TestCount(t *testing.T) {
	for n, want := range map[int]string{0: "0 repeats", 1: "1 repeat", 2: "2 repeats", 300: "300 repeats"} {
		if got := Count(n, "repeat"); got != want {
			t.Errorf("Count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestNumber(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 402211: "402,211", 1234567: "1,234,567", -45000: "-45,000"} {
		if got := Number(n); got != want {
			t.Errorf("Number(%d) = %q, want %q", n, got, want)
		}
	}
}
