package data

import "testing"

// TestDescribeIDs: Scenario-N ids as ranges of N, in order and once each, other ids by name
// after them, and a long list cut with the count.
func TestDescribeIDs(t *testing.T) {
	for _, c := range []struct {
		ids  []string
		want string
	}{
		{[]string{"Scenario-3", "Scenario-1", "Scenario-2", "Scenario-5", "Scenario-5", "mine", "Scenario-x"}, "1-3, 5, Scenario-x, mine"},
		{[]string{"Scenario-38"}, "38"},
		{nil, ""},
	} {
		if got := DescribeIDs(c.ids); got != c.want {
			t.Errorf("DescribeIDs(%q) = %q, want %q", c.ids, got, c.want)
		}
	}
	var many []string
	for i := 0; i < 50; i += 2 {
		many = append(many, "Scenario-"+string(rune('0'+i/10))+string(rune('0'+i%10)))
	}
	if got, want := DescribeIDs(many), "0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 32, 34, 36, 38, ... (25 tasks)"; got != want {
		t.Errorf("25 ids: %q, want %q", got, want)
	}
}
