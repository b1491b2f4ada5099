// Package shareddata locates the real public ITBench data kept beside the project
// (../shared/itbench), for tests. It is never copied into the tree.
package shareddata

import (
	"os"
	"path/filepath"
	"testing"
)

// Dir returns ../shared/itbench relative to the module root. When it is absent the test is
// skipped, except under CI (CI set in the environment), where it fails.
func Dir(t testing.TB) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			itbench := filepath.Join(dir, "..", "shared", "itbench")
			if _, err := os.Stat(itbench); err == nil {
				return itbench
			}
			break
		}
		if filepath.Dir(dir) == dir {
			break
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("../shared/itbench not found beside the module root (from %s); CI must provide it", wd)
	}
	t.Skip("../shared/itbench not found beside the module root; skipping the test on real data")
	return ""
}
