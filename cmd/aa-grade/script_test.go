package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the stories of several commands in a row as script tests, one folder of
// testdata/script per command they are about (run: a replay, a run interrupted and resumed, a
// finished run grown; merge: shards merged and graded), with the real binary first on PATH.
// Each script gets a fresh working folder and caches of its own, and never reaches the Hub.
// A story is told here or in a Go test, never both; the commands scripts have beyond
// testscript's own are in script_cmds_test.go.
func TestScripts(t *testing.T) {
	folders, err := os.ReadDir(filepath.Join("testdata", "script"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range folders {
		if !f.IsDir() {
			t.Fatalf("testdata/script/%s: a script goes in the folder of the command it is about", f.Name())
		}
		t.Run(f.Name(), func(t *testing.T) {
			testscript.Run(t, testscript.Params{
				Dir:   filepath.Join("testdata", "script", f.Name()),
				Setup: setupScript,
				Cmds:  scriptCmds,
			})
		})
	}
}

// setupScript gives a script its environment: aa-grade first on PATH, caches in its working
// folder, a Hub endpoint where nothing listens, and the state of its own commands.
func setupScript(env *testscript.Env) error {
	env.Setenv("PATH", filepath.Dir(binary)+string(os.PathListSeparator)+os.Getenv("PATH"))
	env.Setenv("XDG_CACHE_HOME", filepath.Join(env.WorkDir, ".cache"))
	env.Setenv("HF_HUB_CACHE", filepath.Join(env.WorkDir, ".hub"))
	env.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	env.Setenv("TMPDIR", os.TempDir())
	env.Values[scriptStateKey{}] = &scriptState{}
	return nil
}
