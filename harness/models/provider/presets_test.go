package provider

import (
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader/leaderboard"
)

// TestPresetsMatchTheLeaderboard: one preset per published row, under the row's exact label,
// each with a spec that builds, and prices only with their source and date.
func TestPresetsMatchTheLeaderboard(t *testing.T) {
	if len(Presets) != len(leaderboard.Published) {
		t.Errorf("%d presets for %d published rows", len(Presets), len(leaderboard.Published))
	}
	keys := func(string) string { return "key" }
	seen := map[string]bool{}
	for _, p := range Presets {
		if _, ok := leaderboard.Find(p.Label); !ok {
			t.Errorf("%s: label %q is not a published row", p.Name, p.Label)
		}
		if seen[p.Label] {
			t.Errorf("%s: label %q used twice", p.Name, p.Label)
		}
		if seen[p.Name] {
			t.Errorf("%s: name used twice", p.Name)
		}
		if strings.Contains(p.Name, "/") {
			t.Errorf("%s: a name with a slash", p.Name)
		}
		seen[p.Label], seen[p.Name] = true, true
		if _, err := New(p.Spec, keys, Options{}); err != nil {
			t.Errorf("%s: spec %s: %v", p.Name, p.Spec, err)
		}
		if p.ContextWindow <= 0 {
			t.Errorf("%s: context window %d, want more than 0", p.Name, p.ContextWindow)
		}
		if p.MaxTokens <= 0 || p.MaxTokens > p.ContextWindow {
			t.Errorf("%s: max tokens %d, want 1 to the context window, %d", p.Name, p.MaxTokens, p.ContextWindow)
		}
		if p.Prices == nil {
			if p.PriceSource != "" || p.PriceDate != "" {
				t.Errorf("%s: a price source without prices", p.Name)
			}
			continue
		}
		if u, err := url.Parse(p.PriceSource); err != nil {
			t.Errorf("%s: price source %q is not a URL: %v", p.Name, p.PriceSource, err)
		} else if u.Scheme != "https" || u.Host == "" {
			t.Errorf("%s: price source %q, want an https URL with a host", p.Name, p.PriceSource)
		}
		if _, err := time.Parse(time.DateOnly, p.PriceDate); err != nil {
			t.Errorf("%s: price date %q: %v", p.Name, p.PriceDate, err)
		}
		if p.Prices.Input <= 0 || p.Prices.Output <= 0 {
			t.Errorf("%s: prices %+v: a paid model is not free", p.Name, *p.Prices)
		}
	}
}

func TestPresetReasoning(t *testing.T) {
	for name, want := range map[string]string{
		"claude-opus-4-7-max": "adaptive, effort max",
		"gpt-5.5-xhigh":       "effort xhigh",
		"qwen3.7-max":         "provider default",
	} {
		if p, _ := FindPreset(name); p.Reasoning() != want {
			t.Errorf("%s: %q, want %q", name, p.Reasoning(), want)
		}
	}
}
