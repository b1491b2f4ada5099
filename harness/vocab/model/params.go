package model

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// Params are the generation parameters a user gives the model under test beside what the
// loop sends: the sampling temperature and nucleus (each provider spells them its own way),
// extra fields of the request body and extra HTTP headers. They change what the model
// answers, so run.json records them, a resume compares them and a run of a preset with any
// of them is not the leaderboard's. The zero value sends nothing.
type Params struct {
	Temperature *float64 `json:"temperature,omitempty"`
	TopP        *float64 `json:"top_p,omitempty"`
	// Fields are merged into the request body at its top level, each value as JSON.
	Fields map[string]json.RawMessage `json:"fields,omitempty"`
	// Headers are sent with every request. run.json keeps their values: a key belongs in the
	// environment, where the provider's variable gives it.
	Headers map[string]string `json:"headers,omitempty"`
}

// IsZero reports whether the params send nothing (run.json then omits them).
func (p Params) IsZero() bool {
	return p.Temperature == nil && p.TopP == nil && len(p.Fields) == 0 && len(p.Headers) == 0
}

// String lists the params as NAME=VALUE in a fixed order (temperature, top_p, the fields,
// then the headers, each sorted), "" for none: what a resume compares and a report shows.
func (p Params) String() string {
	var out []string
	if p.Temperature != nil {
		out = append(out, "temperature="+strconv.FormatFloat(*p.Temperature, 'g', -1, 64))
	}
	if p.TopP != nil {
		out = append(out, "top_p="+strconv.FormatFloat(*p.TopP, 'g', -1, 64))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Fields)) {
		out = append(out, k+"="+compact(p.Fields[k]))
	}
	for _, k := range slices.Sorted(maps.Keys(p.Headers)) {
		out = append(out, "header "+k+"="+p.Headers[k])
	}
	return strings.Join(out, " ")
}

// compact is a field's value on one line: run.json writes it indented.
func compact(v json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, v) != nil {
		return string(v)
	}
	return b.String()
}

// ParseField reads KEY=VALUE into a body field: VALUE as JSON when it is JSON (0.5, true,
// {"a":1}, "quoted"), else as a string, so that -M user=alice needs no quotes.
func ParseField(arg string) (string, json.RawMessage, error) {
	key, value, ok := strings.Cut(arg, "=")
	if key = strings.TrimSpace(key); !ok || key == "" {
		return "", nil, fmt.Errorf("%q: expected KEY=VALUE", arg)
	}
	if json.Valid([]byte(value)) {
		return key, json.RawMessage(compact(json.RawMessage(value))), nil
	}
	quoted, err := json.Marshal(value)
	if err != nil {
		return "", nil, fmt.Errorf("%q: %w", arg, err)
	}
	return key, quoted, nil
}
