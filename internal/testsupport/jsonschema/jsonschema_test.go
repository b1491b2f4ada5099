package jsonschema

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const shapes = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "oneOf": [{"$ref": "#/$defs/circle"}, {"$ref": "#/$defs/path"}],
  "$defs": {
    "circle": {"type": "object", "required": ["kind", "r"], "additionalProperties": false,
      "properties": {"kind": {"const": "circle"}, "r": {"type": "number"}}},
    "path": {"type": "object", "required": ["kind"], "additionalProperties": false,
      "properties": {"kind": {"const": "path"}, "points": {"type": ["array", "null"], "items": {"type": "integer"}}}}
  }
}`

// TestValidate: documents of each branch pass; a departure is named, in the branch the kind
// chooses.
func TestValidate(t *testing.T) {
	s, err := Compile([]byte(shapes))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"kind":"circle","r":1.5}`, `{"kind":"path","points":[1,2]}`, `{"kind":"path","points":null}`} {
		if err := s.Validate([]byte(doc)); err != nil {
			t.Errorf("%s: %v", doc, err)
		}
	}
	for doc, want := range map[string]string{
		`{"kind":"circle"}`:                `the document: "r" is missing`,
		`{"kind":"circle","r":"big"}`:      "/r: a string, want number",
		`{"kind":"path","points":[1,2.5]}`: "/points/1: a number, want integer",
		`{"kind":"path","colour":"red"}`:   `the document: "colour" is not allowed`,
		`{"kind":"square"}`:                "matches none of oneOf's schemas",
		`[1]`:                              "a array, want object",
		`{"kind":"circle","r":1} trailing`: "",
	} {
		err := s.Validate([]byte(doc))
		if err == nil && want != "" || err != nil && !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error with %q", doc, err, want)
		}
	}
}

// TestCompileRefusesKeywordsOutsideTheSubset: a schema that asks for more than the subset is
// refused rather than half checked.
func TestCompileRefusesKeywordsOutsideTheSubset(t *testing.T) {
	_, err := Compile([]byte(`{"$defs": {"n": {"type": "integer", "minimum": 0}}}`))
	if err == nil || !strings.Contains(err.Error(), `#/$defs/n: the keyword "minimum"`) {
		t.Fatalf("compile: %v", err)
	}
}

// TestCompileFile: a schema file compiles as its text does; a missing file and a schema with a
// keyword outside the subset are errors naming what failed.
func TestCompileFile(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "shapes.json"), filepath.Join(dir, "bad.json")
	if err := os.WriteFile(good, []byte(shapes), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(`{"type":"string","pattern":"^a"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := MustCompileFile(t, good)
	if err := s.Validate([]byte(`{"kind":"circle","r":"big"}`)); err == nil {
		t.Error("the schema read from its file accepts a circle whose radius is a string")
	}
	if _, err := CompileFile(filepath.Join(dir, "missing.json")); err == nil || !strings.Contains(err.Error(), "read the schema") {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := CompileFile(bad); err == nil || !strings.Contains(err.Error(), bad) {
		t.Errorf("a keyword outside the subset: %v", err)
	}
}
