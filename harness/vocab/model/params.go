package model

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
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
	// Headers are sent with every request and never written: a custom header may carry a
	// secret (a proxy's token, a routing key), and run.json, the trajectories and the reports
	// are shared, so they hold each value's SHA-256 instead, enough for a resume to tell the
	// same value from another.
	Headers map[string]string `json:"-"`
	// HeaderSHA256 are the headers as written: each value's SHA-256 in hex, by name; filled
	// from Headers when the params are written, and what a run.json read back holds.
	HeaderSHA256 map[string]string `json:"header_sha256,omitempty"`
}

// MarshalJSON writes the params with each header's digest in place of its value.
func (p Params) MarshalJSON() ([]byte, error) {
	type plain Params // without this method
	q := plain(p)
	q.HeaderSHA256 = p.headerDigests()
	return json.Marshal(q)
}

// headerDigests are the digests of the headers, those read back and those given, by name.
func (p Params) headerDigests() map[string]string {
	if len(p.Headers) == 0 {
		return p.HeaderSHA256
	}
	out := maps.Clone(p.HeaderSHA256)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range p.Headers {
		out[k] = HeaderDigest(v)
	}
	return out
}

// HeaderDigest is a header's value as it is recorded: its SHA-256, in hex.
func HeaderDigest(value string) string {
	sum := sha256.Sum256([]byte(value))
	return hex.EncodeToString(sum[:])
}

// IsZero reports whether the params send nothing (run.json then omits them).
func (p Params) IsZero() bool {
	return p.Temperature == nil && p.TopP == nil && len(p.Fields) == 0 && len(p.Headers) == 0 &&
		len(p.HeaderSHA256) == 0
}

// String lists the params as NAME=VALUE in a fixed order (temperature, top_p, the fields,
// then the headers, each sorted, a header's value as the first 16 digits of its digest), ""
// for none: what a resume compares and a report shows.
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
	digests := p.headerDigests()
	for _, k := range slices.Sorted(maps.Keys(digests)) {
		out = append(out, "header "+k+"=sha256:"+digests[k][:min(16, len(digests[k]))])
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
