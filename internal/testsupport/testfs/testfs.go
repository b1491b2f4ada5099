// Package testfs writes the files tests lay out.
package testfs

import (
	"os"
	"path/filepath"
	"testing"
)

// Write creates path (and its folders) with content, failing the test on error.
func Write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
