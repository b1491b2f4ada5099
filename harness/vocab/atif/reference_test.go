package atif

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/jsonschema"
)

// valid is this package's verdict on a document: its shape by atif.schema.json, then the rules
// by Check.
func valid(t *testing.T, schema *jsonschema.Schema, doc []byte) error {
	t.Helper()
	if err := schema.Validate(doc); err != nil {
		return err
	}
	var tr Trajectory
	if err := json.Unmarshal(doc, &tr); err != nil {
		return err
	}
	return Check(&tr)
}

func compiledSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return jsonschema.MustCompileFile(t, "atif.schema.json")
}

// stricter are the documents Harbor's v1.7 models accept and Check refuses, and why.
var stricter = map[string]string{
	// The RFC says a tool call's id is unique; Harbor's validator checks it from v1.8 on.
	"bad-duplicate-tool-call-id.json": "tool_call_id",
}

// TestAgreesWithHarbor: on every document of testdata/reference (exports of real runs of each
// provider, and the same with one rule broken each), the schema with Check says what Harbor's
// own models said (testdata/atif_reference.py, run outside the project, wrote
// harbor_verdicts.json).
func TestAgreesWithHarbor(t *testing.T) {
	schema := compiledSchema(t)
	var ref struct {
		Versions []string `json:"harbor_versions"`
		Verdicts map[string]struct {
			Valid bool   `json:"valid"`
			Error string `json:"error"`
		} `json:"verdicts"`
	}
	b, err := os.ReadFile(filepath.Join("testdata", "harbor_verdicts.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &ref); err != nil {
		t.Fatal(err)
	}
	if ref.Versions[len(ref.Versions)-1] != Version {
		t.Fatalf("the verdicts are of Harbor's models up to %s, the export writes %s", ref.Versions[len(ref.Versions)-1], Version)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "reference", "*.json"))
	if len(files) != len(ref.Verdicts) || len(files) < 20 {
		t.Fatalf("%d documents, %d verdicts", len(files), len(ref.Verdicts))
	}
	for _, f := range files {
		name := filepath.Base(f)
		harbor, ok := ref.Verdicts[name]
		if !ok {
			t.Errorf("%s: no verdict of Harbor's", name)
			continue
		}
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		err = valid(t, schema, doc)
		switch why, isStricter := stricter[name]; {
		case isStricter:
			if !harbor.Valid || err == nil {
				t.Errorf("%s: Harbor valid %v, ours %v; expected Harbor to accept and Check to refuse (%s)", name, harbor.Valid, err, why)
			}
		case harbor.Valid && err != nil:
			t.Errorf("%s: Harbor accepts it, ours refuses: %v", name, err)
		case !harbor.Valid && err == nil:
			t.Errorf("%s: Harbor refuses it (%s), ours accepts", name, harbor.Error)
		}
	}
}
