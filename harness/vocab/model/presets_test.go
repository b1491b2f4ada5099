package model

import (
	"errors"
	"net/url"
	"reflect"
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

func TestResolvePresetsAndOverrides(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(v int64) *int64 { return &v }
	usd := func(v float64) *float64 { return &v }
	gpt, _ := FindPreset("gpt-5.5-xhigh")
	cases := []struct {
		name  string
		value string
		o     Overrides
		want  Settings
	}{
		{"preset", "gpt-5.5-xhigh", Overrides{},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "openai/gpt-5.5", Preset: "gpt-5.5-xhigh", ReasoningEffort: "xhigh", ContextWindow: 1_000_000, Prices: gpt.Prices}},
		{"preset with every setting overridden", "gpt-5.5-xhigh",
			Overrides{ReasoningEffort: str("high"), ContextWindow: num(0), MaxTokens: num(8000), Prices: PriceOverrides{Output: usd(10), CachedWrite: usd(6)}},
			Settings{MaxTokens: 8000, Spec: "openai/gpt-5.5", Preset: "gpt-5.5-xhigh", ReasoningEffort: "high",
				Prices: &Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6, Output: 10}}},
		{"Anthropic preset", "claude-opus-4-7-max", Overrides{},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "anthropic/claude-opus-4-7", Preset: "claude-opus-4-7-max", ReasoningEffort: "max", ContextWindow: 1_000_000,
				Prices: &Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6.25, Output: 25}}},
		{"preset without prices", "deepseek-v4-pro-max", Overrides{},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "openrouter/deepseek/deepseek-v4-pro", Preset: "deepseek-v4-pro-max", ReasoningEffort: "max", ContextWindow: 1_000_000}},
		{"preset without prices, one price given", "deepseek-v4-pro-max", Overrides{Prices: PriceOverrides{Output: usd(2)}},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "openrouter/deepseek/deepseek-v4-pro", Preset: "deepseek-v4-pro-max", ReasoningEffort: "max", ContextWindow: 1_000_000,
				Prices: &Prices{Output: 2}}},
		{"spec: prices unknown", "openai/gpt-5.5", Overrides{}, Settings{MaxTokens: DefaultMaxTokens, Spec: "openai/gpt-5.5"}},
		{"spec with flags", "openai-api/vllm/Qwen/Qwen3-32B",
			Overrides{ReasoningEffort: str("low"), ContextWindow: num(32768), Prices: PriceOverrides{Input: usd(0.1), CachedRead: usd(0.01), Output: usd(0.3)}},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "openai-api/vllm/Qwen/Qwen3-32B", ReasoningEffort: "low", ContextWindow: 32768,
				Prices: &Prices{Input: 0.1, CachedRead: 0.01, Output: 0.3}}},
		{"a local model declared free", "openai-api/ollama/llama3", Overrides{Prices: PriceOverrides{Input: usd(0)}},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "openai-api/ollama/llama3", Prices: &Prices{}}},
		{"baseline: known, zero", "builtin/baseline", Overrides{}, Settings{MaxTokens: DefaultMaxTokens, Spec: "builtin/baseline", Prices: &Prices{}}},
		{"baseline with prices", "builtin/baseline", Overrides{Prices: PriceOverrides{Input: usd(1), Output: usd(2)}},
			Settings{MaxTokens: DefaultMaxTokens, Spec: "builtin/baseline", Prices: &Prices{Input: 1, Output: 2}}},
	}
	for _, c := range cases {
		got, err := Resolve(c.value, c.o)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v (prices %+v), want %+v (prices %+v)", c.name, got, got.Prices, c.want, c.want.Prices)
		}
	}
}

func TestResolveLeavesPresetsUntouched(t *testing.T) {
	got, err := Resolve("glm-5.1", Overrides{})
	if err != nil {
		t.Fatal(err)
	}
	got.Prices.Input = 99
	if p, _ := FindPreset("glm-5.1"); p.Prices.Input != 1.4 {
		t.Fatalf("changing a run's prices changed the preset: %+v", *p.Prices)
	}
}

func TestResolveUnknownPreset(t *testing.T) {
	for _, value := range []string{"gpt-9", "", "Claude-Opus-4-7-max"} {
		_, err := Resolve(value, Overrides{})
		if !errors.Is(err, ErrModelSpec) || !errors.Is(err, ErrNotPreset) {
			t.Fatalf("%q: err %v, want ErrModelSpec and ErrNotPreset", value, err)
		}
		if strings.Contains(err.Error(), "aa-grade") {
			t.Errorf("%q: the library names a command: %v", value, err)
		}
		for _, name := range PresetNames() {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%q: the error does not list preset %s: %v", value, name, err)
			}
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
