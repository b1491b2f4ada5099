// Package jsonschema checks JSON documents against a JSON Schema (draft 2020-12), in the small
// subset the project's published schemas use: type, const, required, properties,
// additionalProperties, items, oneOf and $ref to the schema's own $defs. A keyword outside the
// subset is an error when the schema is compiled, so a schema never passes by being half
// read. It is written here rather than imported because tests need no more than these few
// keywords, and a full validator would be the module's largest dependency for them.
package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
)

// Schema is a compiled schema.
type Schema struct {
	root map[string]any
}

// annotations are the keywords that say something to people and nothing to a validator.
var annotations = []string{"$schema", "$id", "title", "description", "format"}

// checked are the keywords of the subset.
var checked = []string{"type", "const", "required", "properties", "additionalProperties", "items", "oneOf", "$ref",
	"$defs"}

// Compile reads a schema, refusing one that uses a keyword outside the subset.
func Compile(doc []byte) (*Schema, error) {
	var root map[string]any
	if err := json.Unmarshal(doc, &root); err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	if err := checkKeywords(root, "#"); err != nil {
		return nil, err
	}
	return &Schema{root: root}, nil
}

// CompileFile reads and compiles the schema in the file at path: the tests that check
// documents against a published schema all start so.
func CompileFile(path string) (*Schema, error) {
	doc, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the schema: %w", err)
	}
	s, err := Compile(doc)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// MustCompileFile is CompileFile for a test, which a schema that does not compile stops.
func MustCompileFile(t testing.TB, path string) *Schema {
	t.Helper()
	s, err := CompileFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// checkKeywords refuses a keyword outside the subset anywhere in the schema s at path.
func checkKeywords(s map[string]any, path string) error {
	for k, v := range s {
		if !slices.Contains(annotations, k) && !slices.Contains(checked, k) {
			return fmt.Errorf("%s: the keyword %q is not in the subset this package checks", path, k)
		}
		var subs map[string]any
		switch k {
		case "properties", "$defs":
			subs, _ = v.(map[string]any)
		case "additionalProperties", "items":
			subs = map[string]any{"": v}
		case "oneOf":
			subs = map[string]any{}
			list, _ := v.([]any)
			for i, e := range list {
				subs[fmt.Sprint(i)] = e
			}
		}
		for name, sub := range subs {
			if m, ok := sub.(map[string]any); ok {
				if err := checkKeywords(m, path+"/"+k+"/"+name); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// Validate checks one JSON document; the error names where it departs from the schema.
func (s *Schema) Validate(doc []byte) error {
	d := json.NewDecoder(bytes.NewReader(doc))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("not JSON: %w", err)
	}
	if _, err := d.Token(); !errors.Is(err, io.EOF) {
		return errors.New("not JSON: more after the value")
	}
	return s.validate(s.root, v, "")
}

func (s *Schema) validate(schema map[string]any, v any, at string) error {
	if ref, ok := schema["$ref"].(string); ok {
		name, ok := strings.CutPrefix(ref, "#/$defs/")
		defs, _ := s.root["$defs"].(map[string]any)
		def, found := defs[name].(map[string]any)
		if !ok || !found {
			return fmt.Errorf("%s: $ref %q names no definition of the schema", where(at), ref)
		}
		if err := s.validate(def, v, at); err != nil {
			return err
		}
	}
	if t, ok := schema["type"]; ok {
		if err := checkType(t, v, at); err != nil {
			return err
		}
	}
	if c, ok := schema["const"]; ok && !equal(c, v) {
		return &constError{fmt.Sprintf("%s: %v, want %v", where(at), v, c)}
	}
	if obj, ok := v.(map[string]any); ok {
		if err := s.validateObject(schema, obj, at); err != nil {
			return err
		}
	}
	if items, ok := schema["items"].(map[string]any); ok {
		list, _ := v.([]any)
		for i, e := range list {
			if err := s.validate(items, e, fmt.Sprintf("%s/%d", at, i)); err != nil {
				return err
			}
		}
	}
	if oneOf, ok := schema["oneOf"].([]any); ok {
		return s.validateOneOf(oneOf, v, at)
	}
	return nil
}

// validateObject checks an object's fields, those whose schema is a const first: a field
// that tells which schema of a oneOf the object means (a "kind") is told apart before the rest.
func (s *Schema) validateObject(schema map[string]any, obj map[string]any, at string) error {
	props, _ := schema["properties"].(map[string]any)
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if p, ok := props[k].(map[string]any); ok && p["const"] != nil {
			if err := s.validate(p, obj[k], at+"/"+k); err != nil {
				return err
			}
		}
	}
	required, _ := schema["required"].([]any)
	for _, r := range required {
		if _, ok := obj[r.(string)]; !ok {
			return fmt.Errorf("%s: %q is missing", where(at), r)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		if p, ok := props[k].(map[string]any); ok {
			if err := s.validate(p, obj[k], at+"/"+k); err != nil {
				return err
			}
			continue
		}
		switch extra := schema["additionalProperties"].(type) {
		case bool:
			if !extra {
				return fmt.Errorf("%s: %q is not allowed", where(at), k)
			}
		case map[string]any:
			if err := s.validate(extra, obj[k], at+"/"+k); err != nil {
				return err
			}
		}
	}
	return nil
}

// constError is a value that is not its schema's const.
type constError struct{ msg string }

func (e *constError) Error() string { return e.msg }

// validateOneOf requires exactly one of the schemas to match. When none does, the error is
// the first that is not a const's: for a schema split by the const of a "kind" field, that
// of the schema of the document's kind.
func (s *Schema) validateOneOf(oneOf []any, v any, at string) error {
	matched := 0
	var errs []error
	for _, o := range oneOf {
		sub, _ := o.(map[string]any)
		if err := s.validate(sub, v, at); err != nil {
			errs = append(errs, err)
			continue
		}
		matched++
	}
	switch {
	case matched == 1:
		return nil
	case matched > 1:
		return fmt.Errorf("%s: matches %d of oneOf's schemas, want one", where(at), matched)
	}
	for _, err := range errs {
		if _, isConst := err.(*constError); !isConst {
			return err
		}
	}
	return fmt.Errorf("%s: matches none of oneOf's schemas: %w", where(at), errors.Join(errs...))
}

func checkType(t any, v any, at string) error {
	var types []string
	switch t := t.(type) {
	case string:
		types = []string{t}
	case []any:
		for _, e := range t {
			types = append(types, fmt.Sprint(e))
		}
	}
	got := typeOf(v)
	if slices.Contains(types, got) || (got == "integer" && slices.Contains(types, "number")) {
		return nil
	}
	return fmt.Errorf("%s: a %s, want %s", where(at), got, strings.Join(types, " or "))
}

// typeOf is the JSON Schema type of a decoded value (numbers decoded as json.Number).
func typeOf(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	case json.Number:
		if _, err := v.Int64(); err == nil {
			return "integer"
		}
		return "number"
	}
	return fmt.Sprintf("%T", v)
}

// equal compares a const of the schema with a value of the document, as JSON.
func equal(c, v any) bool {
	cb, err1 := json.Marshal(c)
	vb, err2 := json.Marshal(v)
	return err1 == nil && err2 == nil && bytes.Equal(cb, vb)
}

// where names a place in the document for an error.
func where(at string) string {
	if at == "" {
		return "the document"
	}
	return at
}
