package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// TestCheckStrictRefuses: every body two parsers could read apart is refused, with an error
// that says why; gjson alone reads each of them (so the old check let them through).
func TestCheckStrictRefuses(t *testing.T) {
	for _, c := range []struct{ body, why string }{
		{`{"model":"a","messages":[],"model":"b"}`, `key "model"`},
		{`{"model":"a","mod\u0065l":"b"}`, `key "model"`},
		{`{"model":"a","Model":"b"}`, `key "Model"`},
		{`{"model":"a","\u004dODEL":"b"}`, `key "MODEL"`},
		{`{"max_tokens":1,"max_to` + "\u212a" + `ens":2}`, "repeats"}, // the Kelvin sign folds to k
		{`{"stream":false,"x":1,"stream":true}`, `key "stream"`},
		{`{"a":{"b":1,"c":{"d":[{"e":1,"e":2}]}}}`, `key "e"`},
		{`{"a":"x` + "\xff" + `"}`, "invalid UTF-8"},
		{`{"a":"x` + "\xed\xa0\x80" + `"}`, "invalid UTF-8"}, // a surrogate encoded in UTF-8
		{`{"a":"\ud800"}`, "lone surrogate"},
		{`{"a":"\udc00\ud800"}`, "lone surrogate"},
		{`{"a":"\ud800\u0041"}`, "lone surrogate"},
		{`{"model":"a"} {"model":"b"}`, "data after the object"},
		{`{"model":"a"}x`, "data after the object"},
		{"\ufeff" + `{"model":"a"}`, "not a JSON object"},
		{`[{"model":"a"}]`, "not a JSON object"},
		{`{"a":01}`, "comma or a closing brace"},
		{`{"a":1.}`, "fraction"},
		{`{"a":NaN}`, "not a JSON value"},
		{`{"a":"tab	in"}`, "control character"},
		{`{"a":"\x"}`, "unknown escape"},
		{`{"a":1,}`, "key is missing"},
		{`{"a":[1,2}`, "closing bracket"},
		{`{"a":tru}`, "not a JSON value"},
		{`{"a":"b`, "not closed"},
		{`{"a":` + strings.Repeat("[", maxDepth) + strings.Repeat("]", maxDepth) + `}`, "nesting deeper"},
		{``, "not a JSON object"},
	} {
		err := checkStrict([]byte(c.body))
		if !errors.Is(err, errNotStrict) {
			t.Errorf("%q: %v, want it refused", c.body, err)
			continue
		}
		if !strings.Contains(err.Error(), c.why) {
			t.Errorf("%q: %v, want it to say %q", c.body, err, c.why)
		}
	}
}

// TestCheckStrictAccepts: the requests of the APIs, with escapes, pairs, deep schemas, keys
// alike in case below the top level and many keys, pass as they are.
func TestCheckStrictAccepts(t *testing.T) {
	many := `{"model":"m","o":{` + strings.TrimSuffix(strings.Repeat(`"k":1,`, 1), ",")
	for i := range 100 {
		many += fmt.Sprintf(`,"k%d":%d`, i, i)
	}
	many += "}}"
	for _, body := range []string{
		`{"model":"run-model-1","messages":[{"role":"user","content":"Hi \"there\" \u00e9 \ud83d\ude00 é 😀"}],"stream":true}`,
		" \t\r\n{ \"a\" : [ 1 , -0.5e+3 , 0 , 1E9 , true , false , null , { } , [ ] ] } \n",
		`{"tools":[{"input_schema":{"properties":{"Name":{"type":"string"},"name":{"type":"string"}}}}]}`,
		`{"a":` + strings.Repeat("[", maxDepth-1) + strings.Repeat("]", maxDepth-1) + `}`,
		`{"a":"\/\b\f\n\r\t\\"}`,
		many,
	} {
		if err := checkStrict([]byte(body)); err != nil {
			t.Errorf("%.80q: %v", body, err)
		}
	}
}

// FuzzCheckStrict: whatever checkStrict accepts, encoding/json and gjson read alike, as one
// object, each key once.
func FuzzCheckStrict(f *testing.F) {
	for _, seed := range []string{
		`{"model":"a","stream":true,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"a","mod\u0065l":"b"}`, `{"a":"\ud83d\ude00","b":[1,2.5e-3,{"c":null}]}`,
		`{"a":1} `, `{"a":"` + "\xff" + `"}`, `{"a":{"a":{"a":1}}}`, `{"A":1,"a":2}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if checkStrict(body) != nil {
			return
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatalf("%q: accepted, but encoding/json reads %v", body, err)
		}
		if _, err := dec.Token(); err != io.EOF {
			t.Fatalf("%q: accepted, but encoding/json finds more after it: %v", body, err)
		}
		if !gjson.ValidBytes(body) {
			t.Fatalf("%q: accepted, but gjson finds it invalid", body)
		}
		got, err := fromGJSON(gjson.ParseBytes(body))
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: gjson reads %#v, encoding/json %#v", body, got, want)
		}
	})
}

// fromGJSON is v as encoding/json decodes into an any (numbers as json.Number), or an error
// when an object repeats a key.
func fromGJSON(v gjson.Result) (any, error) {
	switch {
	case v.IsObject():
		m := map[string]any{}
		var err error
		v.ForEach(func(k, e gjson.Result) bool {
			if _, dup := m[k.Str]; dup {
				err = fmt.Errorf("gjson reads the key %q twice", k.Str)
				return false
			}
			m[k.Str], err = fromGJSON(e)
			return err == nil
		})
		return m, err
	case v.IsArray():
		a := []any{}
		for _, e := range v.Array() {
			x, err := fromGJSON(e)
			if err != nil {
				return nil, err
			}
			a = append(a, x)
		}
		return a, nil
	}
	switch v.Type {
	case gjson.String:
		return v.Str, nil
	case gjson.Number:
		return json.Number(v.Raw), nil
	case gjson.True:
		return true, nil
	case gjson.False:
		return false, nil
	}
	return nil, nil
}

// BenchmarkCheckStrict times the strict pass over a long agent's request: 200 messages of
// 1 KiB, with tools, about 250 KiB (bytes/op is the pass's throughput).
func BenchmarkCheckStrict(b *testing.B) {
	var msgs []string
	for i := range 200 {
		msgs = append(msgs, fmt.Sprintf(`{"role":"user","content":"%s \u00e9 \ud83d\ude00 %d"}`, strings.Repeat("kubectl get pods -n otel-demo ", 34), i))
	}
	body := []byte(`{"model":"m","stream":true,"max_tokens":64000,"tools":[{"type":"function","function":{"name":"shell","parameters":{"type":"object","properties":{"cmd":{"type":"string"}}}}}],"messages":[` +
		strings.Join(msgs, ",") + `]}`)
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if err := checkStrict(body); err != nil {
			b.Fatal(err)
		}
	}
}
