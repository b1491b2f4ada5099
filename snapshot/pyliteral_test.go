package snapshot

import (
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/internal/shareddata"
)

func TestParsePyLiteral(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want any
	}{
		{`{'k8s.namespace.name': 'otel-demo', 'n': 3, 'ok': True, 'x': None, 'l': [1, 2.5, 'a'], 'nested': {'a': (1, 2)}}`,
			map[string]any{"k8s.namespace.name": "otel-demo", "n": int64(3), "ok": true, "x": nil,
				"l": []any{int64(1), 2.5, "a"}, "nested": map[string]any{"a": []any{int64(1), int64(2)}}}},
		{`{}`, map[string]any{}},
		{`[]`, []any{}},
		{`()`, []any{}},
		{`(1,)`, []any{int64(1)}},
		{`(1)`, int64(1)}, // parentheses, not a tuple
		{`[1, 2,]`, []any{int64(1), int64(2)}},
		{`{'a': 1,}`, map[string]any{"a": int64(1)}},
		{" \n{ 'a' :\t[ 1 , ] ,\r\n} \n", map[string]any{"a": []any{int64(1)}}},
		{`{'a': 1, 'a': 2}`, map[string]any{"a": int64(2)}}, // the last one wins, as in Python
		{`{1: 'a', -2.5: 'b', True: 'c', None: 'd', (1, 2): 'e', "f": 'g'}`,
			map[string]any{"1": "a", "-2.5": "b", "True": "c", "None": "d", "(1, 2)": "e", "f": "g"}},
		{`True`, true},
		{`False`, false},
		{`None`, nil},
		{`''`, ""},
		{`""`, ""},
		{`'café 日本'`, "café 日本"},
		{`"it's"`, "it's"},
		{`'it\'s'`, "it's"},
		{`"say \"hi\""`, `say "hi"`},
		{`'a\\b'`, `a\b`},
		{`'\n\t\r\a\b\f\v'`, "\n\t\r\a\b\f\v"},
		{`'\x41\xe9\u00e9\u65e5\U0001F600'`, "A\u00e9\u00e9\u65e5\U0001F600"},
		{`'\101\0\7z\1234'`, "A\x00\x07zS4"},
		{`'\q\N{DASH}\ '`, `\q\N{DASH}\ `}, // kept with the backslash, as Python does
		{"'a\\\nb'", "ab"},                 // a line continuation
		{`'\ud800'`, "\uFFFD"},             // a lone surrogate has no UTF-8 form
		{`0`, int64(0)},
		{`-3`, int64(-3)},
		{`+4`, int64(4)},
		{`9223372036854775807`, int64(math.MaxInt64)},
		{`-9223372036854775808`, int64(math.MinInt64)},
		{`9223372036854775808`, 9223372036854775808.0},
		{`123456789012345678901234567890`, 1.2345678901234568e29},
		{`2.5`, 2.5},
		{`-1e-05`, -1e-05},
		{`1E+20`, 1e20},
		{`.5`, 0.5},
		{`5.`, 5.0},
		{`1e999`, math.Inf(1)},
		{`[[[]], {'a': {'b': [None]}}]`, []any{[]any{[]any{}}, map[string]any{"a": map[string]any{"b": []any{nil}}}}},
	} {
		got, err := ParsePyLiteral(tc.in)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ParsePyLiteral(%q) = %#v, %v; want %#v", tc.in, got, err, tc.want)
		}
	}
}

func TestParsePyLiteralErrors(t *testing.T) {
	for _, tc := range []struct {
		in     string
		offset int
		msg    string
	}{
		{``, 0, "unexpected end, expected a value"},
		{`   `, 3, "unexpected end, expected a value"},
		{`{'a': 1`, 7, "expected ',' or '}'"},
		{`{'a' 1}`, 5, "expected ':' after a dict key"},
		{`{1, 2}`, 2, "expected ':' after a dict key"}, // a set
		{`[1 2]`, 3, "expected ',' or ']'"},
		{`(1 2)`, 3, "expected ',' or ')'"},
		{`[1,,2]`, 3, `unexpected ",", expected a value`},
		{`{,}`, 1, `unexpected ",", expected a value`},
		{`{'a': 1}}`, 8, `unexpected '}' after the value`},
		{`'a' 'b'`, 4, `unexpected '\'' after the value`},
		{`'abc`, 0, "unterminated string"},
		{`'abc\'`, 0, "unterminated string"},
		{`'abc\`, 4, "unterminated string"},
		{`'\x4'`, 1, `invalid \x escape`},
		{`'\x4`, 1, `truncated \x escape`},
		{`'\u12'`, 1, `truncated \u escape`},
		{`'\u12zz'`, 1, `invalid \u escape`},
		{`'\U00110000'`, 1, `invalid \U escape`},
		{`inf`, 0, `unexpected "inf", expected a value`},
		{`float('inf')`, 0, `unexpected "float", expected a value`},
		{`Truex`, 0, `unexpected "Truex", expected a value`},
		{`-`, 0, `invalid number "-"`},
		{`1e`, 0, `invalid number "1e"`},
		{`[1, -x]`, 4, `invalid number "-"`},
		{`0x10`, 1, `unexpected 'x' after the value`},
	} {
		_, err := ParsePyLiteral(tc.in)
		var pe *PyLiteralError
		if !errors.As(err, &pe) || pe.Offset != tc.offset || pe.Msg != tc.msg {
			t.Errorf("ParsePyLiteral(%q): %v; want offset %d: %s", tc.in, err, tc.offset, tc.msg)
		}
	}
}

func TestParsePyLiteralDepth(t *testing.T) {
	nest := func(n int) string { return strings.Repeat("[{'a': ", n) + "1" + strings.Repeat("}]", n) }
	if _, err := ParsePyLiteral(nest(256)); err != nil { // 512 levels
		t.Errorf("512 levels: %v", err)
	}
	var pe *PyLiteralError
	in := "[" + nest(256) + "]"
	if _, err := ParsePyLiteral(in); !errors.As(err, &pe) || pe.Msg != "nested deeper than 512" || pe.Offset != strings.LastIndex(in, "{") {
		t.Errorf("513 levels: %v, want offset %d", err, strings.LastIndex(in, "{"))
	}
	if _, err := ParsePyLiteral(strings.Repeat("(", 10_000_000)); err == nil { // no stack overflow
		t.Error("10 million levels: no error")
	}
}

func TestParsePyDict(t *testing.T) {
	for _, in := range []string{"", " \n", "{}", " { } "} {
		if m, err := ParsePyDict(in); err != nil || m == nil || len(m) != 0 {
			t.Errorf("ParsePyDict(%q) = %#v, %v; want an empty map", in, m, err)
		}
	}
	if m, err := ParsePyDict(`{'a': [1]}`); err != nil || !reflect.DeepEqual(m, map[string]any{"a": []any{int64(1)}}) {
		t.Errorf("ParsePyDict = %#v, %v", m, err)
	}
	var pe *PyLiteralError
	if _, err := ParsePyDict(` ['a']`); !errors.As(err, &pe) || pe.Offset != 1 || pe.Msg != "not a dict" {
		t.Errorf("a list: %v, want offset 1: not a dict", err)
	}
	if _, err := ParsePyDict(`{'a'}`); !errors.As(err, &pe) || pe.Offset != 4 {
		t.Errorf("a set: %v, want an error at offset 4", err)
	}
}

// TestParsePyDictRealAttributes parses the attribute columns of the real snapshot heads.
func TestParsePyDictRealAttributes(t *testing.T) {
	dir := filepath.Join(shareddata.Dir(t), "snapshot-fragments", "Scenario-2")
	parse := func(s string) map[string]any {
		t.Helper()
		m, err := ParsePyDict(s)
		if err != nil {
			t.Fatalf("%v in %.100q", err, s)
		}
		return m
	}
	columns := func(file string, names ...string) (values [][]string) {
		t.Helper()
		f, err := os.Open(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r := NewTSVReader(f, file)
		header, err := r.Header()
		if err != nil {
			t.Fatal(err)
		}
		for {
			fields, _, err := r.Next()
			if err == io.EOF {
				return values
			}
			if err != nil {
				t.Fatal(err)
			}
			var row []string
			for _, name := range names {
				row = append(row, fields[slices.Index(header, name)])
			}
			values = append(values, row)
		}
	}

	events := columns("k8s_events_raw.tsv.HEAD-FRAGMENT", "ResourceAttributes", "ScopeAttributes", "LogAttributes")
	if len(events) != 2 {
		t.Fatalf("%d events", len(events))
	}
	for _, row := range events {
		if m := parse(row[0]); !reflect.DeepEqual(m, map[string]any{"k8s.namespace.name": "ingress-nginx"}) {
			t.Errorf("ResourceAttributes %v", m)
		}
		if m := parse(row[1]); len(m) != 0 {
			t.Errorf("ScopeAttributes %v", m)
		}
		if m := parse(row[2]); len(m) != 3 || m["event.domain"] != "k8s" || m["k8s.resource.name"] != "events" ||
			m["event.name"] != "ingress-nginx-controller-75cfcdbd64-pnlpk.18812794eba64aa5" {
			t.Errorf("LogAttributes %v", m)
		}
	}

	tags := columns(filepath.Join("metrics", "service_frontend-proxy_raw.tsv.HEAD-FRAGMENT"), "tags", "bucket_le")
	for _, row := range tags {
		if m := parse(row[0]); len(m) != 18 || m["service_name"] != "frontend-proxy" || m["le"] != row[1] || m["instance"] != "100.96.3.144:8889" {
			t.Errorf("tags %v", m)
		}
	}

	// The traces head ends inside its only record: its attribute columns come before the cut,
	// on the first line of the record.
	head, err := os.ReadFile(filepath.Join(dir, "otel_traces_raw.tsv.HEAD-FRAGMENT"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(head), "\n")
	header, span := strings.Split(lines[0], "\t"), strings.Split(lines[1], "\t")
	resource := parse(span[slices.Index(header, "ResourceAttributes")])
	if len(resource) != 17 || resource["k8s.pod.name"] != "recommendation-5f45f75855-j5sn9" || resource["telemetry.sdk.language"] != "python" {
		t.Errorf("ResourceAttributes %v", resource)
	}
	if m := parse(span[slices.Index(header, "SpanAttributes")]); !reflect.DeepEqual(m, map[string]any{
		"rpc.grpc.status_code": "4", "rpc.method": "EventStream", "rpc.service": "flagd.evaluation.v1.Service", "rpc.system": "grpc"}) {
		t.Errorf("SpanAttributes %v", m)
	}
}

// FuzzParsePyLiteral checks that no input makes the parser panic, and that an error always
// says where, within the input.
func FuzzParsePyLiteral(f *testing.F) {
	for _, s := range []string{
		`{'k8s.namespace.name': 'otel-demo', 'n': 3, 'ok': True, 'x': None, 'l': [1, 2.5, 'a'], 'nested': {'a': (1, 2)}}`,
		`'\x41\u00e9\U0001F600\101\q\
'`, `[-1e-05, +4, .5, 5., 1e999, 9223372036854775808]`, `((1,), (), [], {})`, `"it's \"x\""`, `{1: 2, None: (3)}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParsePyLiteral(s)
		var pe *PyLiteralError
		if err != nil && (!errors.As(err, &pe) || pe.Offset < 0 || pe.Offset > len(s)) {
			t.Fatalf("ParsePyLiteral(%q): %v: not an error with an offset in the input", s, err)
		}
		m, errDict := ParsePyDict(s)
		if _, isDict := v.(map[string]any); isDict && (errDict != nil || !reflect.DeepEqual(m, v)) {
			t.Fatalf("ParsePyDict(%q) = %v, %v; ParsePyLiteral gave %v", s, m, errDict, v)
		}
	})
}
