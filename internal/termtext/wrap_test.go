package termtext

import (
	"slices"
	"testing"
)

// TestWrap: lines break at spaces within the width, the later ones indented; a word wider
// than a line is cut; text that fits, or no width, stays one line.
func TestWrap(t *testing.T) {
	for _, c := range []struct {
		s    string
		cols int
		want []string
	}{
		{"warning: the sandbox differs from the reference", 20, []string{"warning: the sandbox", "  differs from the", "  reference"}},
		{"short", 20, []string{"short"}},
		{"a b c", 0, []string{"a b c"}},
		{"see sha256:0123456789abcdef0123 here", 12, []string{"see", "  sha256:012", "  3456789abc", "  def0123", "  here"}},
		{"first https://a.example/0123 x", 16, []string{"first", "  https://a.exam", "  ple/0123 x"}},
	} {
		got := Wrap(c.s, c.cols, "  ")
		if !slices.Equal(got, c.want) {
			t.Errorf("Wrap(%q, %d) = %q, want %q", c.s, c.cols, got, c.want)
		}
		for _, l := range got {
			if c.cols > 0 && Width(l) > c.cols {
				t.Errorf("Wrap(%q, %d): %q is wider than %d", c.s, c.cols, l, c.cols)
			}
		}
	}
}
