// Package golden compares a test's output with a file kept beside the test (a golden file),
// and rewrites the file when the test runs with -update: one helper, so every package's
// golden tests are updated the same way (go test ./PKG -update).
package golden

import (
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// Update says whether the tests run with -update: a test that keeps a generated part of a
// larger file (a table in a doc) rewrites it then.
func Update() bool { return *update }

// Check compares got with the file at path, or writes got there under -update.
func Check(t testing.TB, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (go test -update creates it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it)\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}
