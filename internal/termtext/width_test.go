package termtext

import "testing"

func TestWidthAndClip(t *testing.T) {
	for _, c := range []struct {
		s     string
		width int
	}{{"", 0}, {"kubectl get pods", 16}, {"日本語", 6}, {"e\u0301te", 3}, {"ok 🙂", 5}, {"ｆｕｌｌ", 8}} {
		if got := Width(c.s); got != c.width {
			t.Errorf("Width(%q) = %d, want %d", c.s, got, c.width)
		}
	}
	for _, c := range []struct {
		s    string
		cols int
		want string
	}{
		{"kubectl get pods", 16, "kubectl get pods"},
		{"kubectl get pods", 15, "kubectl get ..."},
		{"日本語のログ", 8, "日本..."}, // a wide character does not straddle the limit
		{"abcdef", 2, ".."},
		{"abcdef", 0, ""},
	} {
		got := Clip(c.s, c.cols)
		if got != c.want || Width(got) > c.cols {
			t.Errorf("Clip(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
	}
}
