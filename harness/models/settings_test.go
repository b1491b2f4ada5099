package models

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

func TestResolvePresetsAndOverrides(t *testing.T) {
	str := func(s string) *string { return &s }
	num := func(v int64) *int64 { return &v }
	usd := func(v float64) *float64 { return &v }
	gpt, _ := provider.FindPreset("gpt-5.5-xhigh")
	cases := []struct {
		name  string
		value string
		o     Overrides
		want  Settings
	}{
		{"preset", "gpt-5.5-xhigh", Overrides{},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openai/gpt-5.5", Preset: "gpt-5.5-xhigh", ReasoningEffort: "xhigh", ContextWindow: 1_000_000, Prices: gpt.Prices}},
		{"preset with every setting overridden", "gpt-5.5-xhigh",
			Overrides{ReasoningEffort: str("high"), ContextWindow: num(0), MaxTokens: num(8000), Prices: PriceOverrides{Output: usd(10), CachedWrite: usd(6)}},
			Settings{MaxTokens: 8000, Spec: "openai/gpt-5.5", Preset: "gpt-5.5-xhigh", ReasoningEffort: "high",
				Prices: &model.Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6, Output: 10}}},
		{"Anthropic preset", "claude-opus-4-7-max", Overrides{},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "anthropic/claude-opus-4-7", Preset: "claude-opus-4-7-max", ReasoningEffort: "max", ContextWindow: 1_000_000,
				Prices: &model.Prices{Input: 5, CachedRead: 0.5, CachedWrite: 6.25, Output: 25}}},
		{"preset without prices", "deepseek-v4-pro-max", Overrides{},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openrouter/deepseek/deepseek-v4-pro", Preset: "deepseek-v4-pro-max", ReasoningEffort: "max", ContextWindow: 1_000_000}},
		{"preset without prices, one price given", "deepseek-v4-pro-max", Overrides{Prices: PriceOverrides{Output: usd(2)}},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openrouter/deepseek/deepseek-v4-pro", Preset: "deepseek-v4-pro-max", ReasoningEffort: "max", ContextWindow: 1_000_000,
				Prices: &model.Prices{Output: 2}}},
		{"spec: prices unknown", "openai/gpt-5.5", Overrides{}, Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openai/gpt-5.5"}},
		{"spec with flags", "openai-api/vllm/Qwen/Qwen3-32B",
			Overrides{ReasoningEffort: str("low"), ContextWindow: num(32768), Prices: PriceOverrides{Input: usd(0.1), CachedRead: usd(0.01), Output: usd(0.3)}},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openai-api/vllm/Qwen/Qwen3-32B", ReasoningEffort: "low", ContextWindow: 32768,
				Prices: &model.Prices{Input: 0.1, CachedRead: 0.01, Output: 0.3}}},
		{"a local model declared free", "openai-api/ollama/llama3", Overrides{Prices: PriceOverrides{Input: usd(0)}},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "openai-api/ollama/llama3", Prices: &model.Prices{}}},
		{"baseline: known, zero", "builtin/baseline", Overrides{}, Settings{MaxTokens: model.DefaultMaxTokens, Spec: "builtin/baseline", Prices: &model.Prices{}}},
		{"baseline with prices", "builtin/baseline", Overrides{Prices: PriceOverrides{Input: usd(1), Output: usd(2)}},
			Settings{MaxTokens: model.DefaultMaxTokens, Spec: "builtin/baseline", Prices: &model.Prices{Input: 1, Output: 2}}},
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
	if p, _ := provider.FindPreset("glm-5.1"); p.Prices.Input != 1.4 {
		t.Fatalf("changing a run's prices changed the preset: %+v", *p.Prices)
	}
}

func TestResolveUnknownPreset(t *testing.T) {
	for _, value := range []string{"gpt-9", "", "Claude-Opus-4-7-max"} {
		_, err := Resolve(value, Overrides{})
		if !errors.Is(err, model.ErrModelSpec) || !errors.Is(err, ErrNotPreset) {
			t.Fatalf("%q: err %v, want ErrModelSpec and ErrNotPreset", value, err)
		}
		if strings.Contains(err.Error(), "aa-grade") {
			t.Errorf("%q: the library names a command: %v", value, err)
		}
		for _, name := range provider.PresetNames() {
			if !strings.Contains(err.Error(), name) {
				t.Errorf("%q: the error does not list preset %s: %v", value, name, err)
			}
		}
	}
}
