package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the stories of several commands in a row (run in shards, merge, grade the
// merged run, replay a recording) as script tests, testdata/script/*.txtar, with the real
// binary first on PATH. Each script gets a fresh working folder and caches of its own, and
// never reaches the Hub.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("PATH", filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
			env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
			env.Setenv("HF_HUB_CACHE", filepath.Join(env.WorkDir, ".hub"))
			env.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
			env.Setenv("TMPDIR", os.TempDir())
			return nil
		},
	})
}
