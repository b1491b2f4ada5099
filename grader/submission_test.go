package grader

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestReadSubmissionFormats(t *testing.T) {
	for name, c := range map[string]struct {
		doc, format string
		names       []string
	}{
		"reference": {`{"contributing_factors":[{"name":"shop/ConfigMap/flags","reasoning":"r","evidence":"e"},{"name":"shop/Pod/p"}]}`,
			"contributing_factors", []string{"shop/ConfigMap/flags", "shop/Pod/p"}},
		"IBM, only true entries": {`{"entities":[{"name":"a/K/x","contributing_factor":true},{"name":"a/K/y","contributing_factor":false},{"name":"a/K/z"},{"name":"a/K/w","contributing_factor":"true"}]}`,
			"entities", []string{"a/K/x"}},
		"bare array of names":   {`["a/K/x", "a/K/y"]`, "array", []string{"a/K/x", "a/K/y"}},
		"bare array of objects": {`[{"name":"a/K/x"},{"name":"a/K/y","contributing_factor":false}]`, "array", []string{"a/K/x"}},
		"code fence": {"Here is my answer:\n```json\n{\"contributing_factors\":[{\"name\":\"a/K/x\"}]}\n```\nThanks.",
			"contributing_factors", []string{"a/K/x"}},
		"prose around": {`After [careful] review, {"note": 1} the root cause is {"contributing_factors": [{"name": "a/K/x"}]} and that is all.`,
			"contributing_factors", []string{"a/K/x"}},
		"braces in strings": {`text {"contributing_factors":[{"name":"a/K/x","reasoning":"saw } and ] in logs \" quoted"}]} more`,
			"contributing_factors", []string{"a/K/x"}},
		"byte order mark":  {"\xef\xbb\xbf[\"a/K/x\"]", "array", []string{"a/K/x"}},
		"empty list":       {`{"contributing_factors":[]}`, "contributing_factors", nil},
		"blank names":      {`["", "  ", "a/K/x", 7, null]`, "array", []string{"a/K/x"}},
		"names trimmed":    {`["  a/K/x  "]`, "array", []string{"a/K/x"}},
		"unknown keys too": {`{"contributing_factors":[{"name":"a/K/x"}],"propagations":[]}`, "contributing_factors", []string{"a/K/x"}},
		// A list of files or words in the prose is not the answer when a later value is.
		"files listed before the answer": {"I read [\"alerts\",\"k8s_events_raw.tsv\"] first.\n```json\n{\"contributing_factors\":[{\"name\":\"otel-demo/ConfigMap/flagd-config\"}]}\n```",
			"contributing_factors", []string{"otel-demo/ConfigMap/flagd-config"}},
		"paths listed before a bare answer": {`Files: ["metrics/pod_cart_raw.tsv", "alerts"]. Answer: ["otel-demo/Service/cart"]`,
			"array", []string{"otel-demo/Service/cart"}},
		// An array naming an entity is an answer: the first answer still wins.
		"entities listed before the answer": {`Checked ["otel-demo/Service/cart"]; answer {"contributing_factors":[{"name":"otel-demo/Pod/x"}]}`,
			"array", []string{"otel-demo/Service/cart"}},
		"only a list of words": {`I looked at ["alerts", "traces"] and found nothing.`, "array", []string{"alerts", "traces"}},
		// An entities list in which no item carries contributing_factor is a plain list.
		"entities as names":         {`{"entities": ["otel-demo/Deployment/x"]}`, "entities", []string{"otel-demo/Deployment/x"}},
		"entities without any flag": {`{"entities": [{"name": "a/K/x"}, {"name": "a/K/y", "reason": "r"}]}`, "entities", []string{"a/K/x", "a/K/y"}},
		"IBM, none true":            {`{"entities": [{"name": "a/K/x", "contributing_factor": false}]}`, "entities", nil},
	} {
		t.Run(name, func(t *testing.T) {
			sub, err := ReadSubmission([]byte(c.doc))
			if err != nil {
				t.Fatal(err)
			}
			if sub.Format != c.format || !slices.Equal(sub.Names, c.names) {
				t.Fatalf("got %+v, want format %s names %q", sub, c.format, c.names)
			}
		})
	}
}

func TestReadSubmissionInvalid(t *testing.T) {
	for name, c := range map[string]struct{ doc, reason string }{
		"too large":       {`["` + strings.Repeat("x", MaxSubmissionBytes) + `"]`, "more than the 4 MiB"},
		"not JSON":        {"the root cause is the cart service", "no JSON value"},
		"empty":           {"  \n", "empty file"},
		"no list":         {`{"answer": "cart"}`, "no list of entities"},
		"a string":        {`"shop/Pod/x"`, "no list of entities"},
		"cut short":       {`{"contributing_factors": [{"name": "a/K/x"`, "invalid JSON: the file ends at line 1, column 43 inside the value that starts at line 1"},
		"cut after item":  {`{"contributing_factors": [{"name": "a/K/x"}`, "invalid JSON: the file ends at line 1, column 44"},
		"hostile nesting": {strings.Repeat("[", MaxSubmissionBytes), "exceeded max depth"},
		"trailing comma": {"Answer:\n{\n  \"contributing_factors\": [\n    {\"name\": \"a/K/x\",}\n  ]\n}\n",
			`invalid JSON at line 4, column 22: invalid character '}' looking for beginning of object key string`},
		"single quotes":   {`{'contributing_factors': [{'name': 'a/K/x'}]}`, "invalid JSON at line 1, column 2: invalid character '\\'' looking for beginning of object key string"},
		"misspelt name":   {`{"contributing_factors": [{"nam": "x"}]}`, `contributing_factors names no entity: item 1 has no "name" (keys: "nam")`},
		"only numbers":    {`{"contributing_factors": [1, 2, 3, 4, null]}`, "contributing_factors names no entity: item 1 is a number, not a name or an object with \"name\"; item 2 is a number, not a name or an object with \"name\"; item 3 is a number, not a name or an object with \"name\"; and 2 more"},
		"name not string": {`{"contributing_factors": [{"name": ["a/K/x"]}]}`, "item 1's name is an array, not a string"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ReadSubmission([]byte(c.doc))
			if !errors.Is(err, ErrInvalidSubmission) || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("err = %v, want ErrInvalidSubmission saying %q", err, c.reason)
			}
		})
	}
}

// FuzzReadSubmission checks that no input makes the reader panic, and that whatever it
// accepts yields only non-blank, trimmed names.
func FuzzReadSubmission(f *testing.F) {
	for _, seed := range []string{
		`{"contributing_factors":[{"name":"a/K/x"}]}`,
		`{"entities":[{"name":"a/K/x","contributing_factor":true}]}`,
		`["a/K/x"]`, "```json\n[\"a\"]\n```", `{"a":[`, `[[[[`, `"\"`, "{\"x\": \"\\u00",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		sub, err := ReadSubmission(doc)
		if err != nil {
			if !errors.Is(err, ErrInvalidSubmission) {
				t.Fatalf("error not marked invalid: %v", err)
			}
			return
		}
		for _, n := range sub.Names {
			if n == "" || n != strings.TrimSpace(n) {
				t.Fatalf("name %q is blank or untrimmed", n)
			}
		}
		gt := mustParse(t, shopGT)
		_ = gt.Score(sub.Names)
	})
}
