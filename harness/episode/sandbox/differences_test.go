package sandbox

import (
	"slices"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// TestDifferencesNameTheMissingPython: a sandbox with python3 and no python (Debian's own)
// is told apart from one with no Python at all, so that the run's warning and doctor, which
// lists python3 among the tools, say the same thing.
func TestDifferencesNameTheMissingPython(t *testing.T) {
	without := func(missing ...string) Tools {
		tools := Tools{Commands: map[string]bool{}, Python: shellspec.ReferencePackages}
		for _, c := range probeTools {
			tools.Commands[c] = !slices.Contains(missing, c)
		}
		return tools
	}
	for _, c := range []struct {
		missing []string
		want    []string
	}{
		{nil, nil},
		{[]string{"python"}, []string{"no python command, only python3"}},
		{[]string{"python3"}, []string{"no python3 command, only python"}},
		{[]string{"python3", "python"}, []string{"no python3", "no python"}},
		{[]string{"jq"}, []string{"no jq"}},
	} {
		if got := without(c.missing...).Differences(); !slices.Equal(got, c.want) {
			t.Errorf("without %q: %q, want %q", c.missing, got, c.want)
		}
	}
}
