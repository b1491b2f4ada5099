package models

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// BaselineSpec is the built-in rule-based model. It calls no API, so its cost is known: zero.
// Resolve and Open both know it, so it is here rather than in package baseline.
const BaselineSpec = "builtin/baseline"

// Settings are the model settings of a run.
type Settings struct {
	Spec            string // PROVIDER/MODEL
	Preset          string // the preset's name when the --model value named one
	ReasoningEffort string
	ContextWindow   int64
	MaxTokens       int64
	Prices          *model.Prices // nil: unknown
}

// Overrides are the settings a user gave explicitly; nil means not given, so a preset's value
// stays.
type Overrides struct {
	ReasoningEffort *string
	ContextWindow   *int64
	MaxTokens       *int64
	Prices          PriceOverrides
}

// PriceOverrides are prices in USD per million tokens given one by one.
type PriceOverrides struct {
	Input, CachedRead, CachedWrite, Output *float64
}

// ErrNotPreset marks, besides ErrModelSpec, a model value with no "/" that names no preset.
var ErrNotPreset = errors.New("neither PROVIDER/MODEL nor a preset")

// Resolve turns a --model value and the user's overrides into a run's settings. A value
// without a "/" must name a preset, and expands to its spec, reasoning effort, context window
// max tokens and prices; every override wins over the preset; max tokens is DefaultMaxTokens
// when neither gives it. builtin/baseline has known prices of zero.
func Resolve(value string, o Overrides) (Settings, error) {
	s := Settings{Spec: value, MaxTokens: model.DefaultMaxTokens}
	if !strings.Contains(value, "/") {
		p, ok := provider.FindPreset(value)
		if !ok {
			return Settings{}, fmt.Errorf("%w: %q is %w (%s)", model.ErrModelSpec, value, ErrNotPreset,
				strings.Join(provider.PresetNames(), ", "))
		}
		s = Settings{Spec: p.Spec, Preset: p.Name, ReasoningEffort: p.ReasoningEffort, ContextWindow: p.ContextWindow,
			MaxTokens: p.MaxTokens, Prices: p.Prices}
	}
	if s.Spec == BaselineSpec {
		s.Prices = &model.Prices{}
	}
	if o.ReasoningEffort != nil {
		s.ReasoningEffort = *o.ReasoningEffort
	}
	if o.ContextWindow != nil {
		s.ContextWindow = *o.ContextWindow
	}
	if o.MaxTokens != nil {
		s.MaxTokens = *o.MaxTokens
	}
	s.Prices = o.Prices.over(s.Prices)
	return s, nil
}

// over returns base with the given prices in place of its own, as a copy (presets stay
// untouched). When base is unknown, the prices not given are zero: a zero cache price means
// the input price, a zero input or output price means free. Nothing given keeps base.
func (o PriceOverrides) over(base *model.Prices) *model.Prices {
	given := o.Input != nil || o.CachedRead != nil || o.CachedWrite != nil || o.Output != nil
	if base == nil && !given {
		return nil
	}
	var p model.Prices
	if base != nil {
		p = *base
	}
	set := func(field, v *float64) {
		if v != nil {
			*field = *v
		}
	}
	set(&p.Input, o.Input)
	set(&p.CachedRead, o.CachedRead)
	set(&p.CachedWrite, o.CachedWrite)
	set(&p.Output, o.Output)
	return &p
}
