package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the stories of several commands in a row (run in shards, merge, grade the
// merged run; replay a recording; interrupt a run and resume it; grow a finished run) as
// script tests, testdata/script/*.txtar, with the real
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
		Cmds: map[string]func(*testscript.TestScript, bool, []string){"waitlines": waitLines},
	})
}

// waitLines is the script command `waitlines FILE N`: it waits until FILE has N lines or more
// (a run's results.jsonl, as episodes end), so that a script acts in the middle of a run
// whatever the machine's speed. It gives up after two minutes.
func waitLines(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: waitlines FILE N")
	}
	n, err := strconv.Atoi(args[1])
	ts.Check(err)
	for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile(ts.MkAbs(args[0]))
		if err == nil && bytes.Count(b, []byte("\n")) >= n {
			return
		}
	}
	ts.Fatalf("%s never had %d lines", args[0], n)
}
