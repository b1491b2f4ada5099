package main

import (
	"encoding/json"
	"math"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// paramFlags are the flags of the model's own parameters, which the reference harness never
// sends.
var paramFlags = []string{"temperature", "top-p", "model-arg", "model-header"}

// paramOptions are run's flags of the model's parameters (model.Params), as inspect_ai
// spells them (--temperature, --top-p, -M KEY=VALUE).
type paramOptions struct {
	temperature, topP float64
	fields, headers   repeated
	notComparable     bool
}

func (o *paramOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.FloatFlag{Name: "temperature", Destination: &o.temperature, DefaultText: "the provider's",
			Usage: "the model's sampling temperature, sent in every request (the reference harness sends none: " +
				"see --not-comparable)"},
		&cli.FloatFlag{Name: "top-p", Destination: &o.topP, DefaultText: "the provider's",
			Usage: "the model's nucleus sampling, above 0 and at most 1, sent in every request"},
		&cli.GenericFlag{Name: "model-arg", Aliases: []string{"M"}, Value: &o.fields,
			Usage: "KEY=VALUE: a field of every request's body, at its top level (VALUE as JSON when it is JSON, " +
				`else a string: -M chat_template_kwargs='{"enable_thinking":false}'); repeatable`},
		&cli.GenericFlag{Name: "model-header", Value: &o.headers,
			Usage: "NAME=VALUE: an HTTP header of every request (run.json records its name and the SHA-256 " +
				"of its value, never the value); repeatable"},
		&cli.BoolFlag{Name: "not-comparable", Destination: &o.notComparable,
			Usage: "let a preset take --temperature, --top-p, --model-arg or --model-header; the run is then " +
				"not comparable with the leaderboard row the preset reproduces, and its reports say so"},
	}
}

// read makes the params of the flags set, refusing a value that means nothing or a key given
// twice, naming the flag.
func (o *paramOptions) read(isSet func(string) bool) (model.Params, error) {
	var p model.Params
	if isSet("temperature") {
		if t := o.temperature; t < 0 || math.IsNaN(t) || math.IsInf(t, 0) {
			return p, usageErrorf("--temperature %v: must be 0 or more", t)
		}
		p.Temperature = &o.temperature
	}
	if isSet("top-p") {
		if t := o.topP; !(t > 0 && t <= 1) {
			return p, usageErrorf("--top-p %v: must be above 0 and at most 1", t)
		}
		p.TopP = &o.topP
	}
	for _, arg := range o.fields {
		key, value, err := model.ParseField(arg)
		if err != nil {
			return p, usageErrorf("--model-arg %w", err)
		}
		if _, twice := p.Fields[key]; twice {
			return p, usageErrorf("--model-arg %s: given twice", key)
		}
		if p.Fields == nil {
			p.Fields = map[string]json.RawMessage{}
		}
		p.Fields[key] = value
	}
	for _, arg := range o.headers {
		name, value, ok := strings.Cut(arg, "=")
		if name = strings.TrimSpace(name); !ok || name == "" || strings.ContainsAny(name, " \t:\r\n") {
			return p, usageErrorf("--model-header %q: expected NAME=VALUE", arg)
		}
		if p.Headers == nil {
			p.Headers = map[string]string{}
		}
		p.Headers[name] = value
	}
	return p, nil
}

// checkParams refuses the model's params where they cannot go: an agent's requests are the
// agent's, and a preset stands for a leaderboard row, which other parameters would not
// reproduce unless the user says the run need not compare with it.
func (o runOptions) checkParams(s models.Settings) error {
	var set []string
	for _, name := range paramFlags {
		if o.isSet(name) {
			set = append(set, "--"+name)
		}
	}
	if len(set) == 0 {
		return nil
	}
	given := strings.Join(set, ", ")
	switch {
	case o.agent.agent != nil:
		return usageErrorf("%s: aa-grade's loop sends them; an agent (--agent) sends requests of its own", given)
	case s.Preset != "" && !o.params.notComparable:
		return usageErrorf("--model %s is a preset, which reproduces a leaderboard row with the provider's "+
			"parameters: %s would make the run compare with it no longer; add --not-comparable to run it so anyway",
			s.Preset, given)
	}
	return nil
}

// repeated is a flag's values, one an occurrence, never split on commas (a JSON value holds
// them).
type repeated []string

func (r *repeated) Set(v string) error { *r = append(*r, v); return nil }
func (r *repeated) String() string     { return strings.Join(*r, " ") }
func (r *repeated) Get() any           { return []string(*r) }
