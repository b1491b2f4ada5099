package main

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
)

// scriptCmds are the commands the script tests have beyond testscript's own: what a story of
// aa-grade needs to say that exec, stdout and grep cannot.
var scriptCmds = map[string]func(*testscript.TestScript, bool, []string){
	"waitlines":       waitLines,
	"fakemodel":       fakeModel,
	"modelcalled":     modelCalled,
	"sameepisodes":    sameEpisodes,
	"trajectorykinds": trajectoryKindsCmd,
	"hasprefix":       hasPrefix,
}

// scriptStateKey keys a script's scriptState in its testscript values.
type scriptStateKey struct{}

// scriptState is what a script's commands keep between lines: its fake model, and how many
// of its requests modelcalled has counted.
type scriptState struct {
	fake    *fakemodel.Server
	counted int64
}

// stateOf is the state of the script ts runs, which setupScript gave it.
func stateOf(ts *testscript.TestScript) *scriptState {
	return ts.Value(scriptStateKey{}).(*scriptState)
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

// fakeModel is the script command `fakemodel TURNS COMMAND ENTITY...`: a fake OpenAI provider
// on 127.0.0.1 for the rest of the script, whose model runs COMMAND for TURNS turns and then
// answers the entities (fakemodel.Script); the script's runs reach it as openai/fake. Another
// fakemodel replaces it, as a provider that changed between two runs.
func fakeModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: fakemodel TURNS COMMAND ENTITY...")
	}
	turns, err := strconv.Atoi(args[0])
	ts.Check(err)
	fake := &fakemodel.Server{Script: fakemodel.Script{Turns: turns, Command: args[1], Answer: args[2:]}}
	srv := httptest.NewServer(fake)
	ts.Defer(srv.Close)
	ts.Setenv("OPENAI_BASE_URL", srv.URL)
	ts.Setenv("OPENAI_API_KEY", testKey)
	*stateOf(ts) = scriptState{fake: fake}
}

// modelCalled is the script command `modelcalled`: it fails unless the fake model was sent a
// request since the previous modelcalled (or since it started); `! modelcalled` fails if it
// was, which is how a script says that a run called no model (a replay).
func modelCalled(ts *testscript.TestScript, neg bool, args []string) {
	st := stateOf(ts)
	if len(args) != 0 || st.fake == nil {
		ts.Fatalf("usage: modelcalled, after fakemodel")
	}
	now := st.fake.Requests()
	calls := now - st.counted
	st.counted = now
	switch {
	case neg && calls > 0:
		ts.Fatalf("the fake model was called %d times", calls)
	case !neg && calls == 0:
		ts.Fatalf("the fake model was not called")
	}
}

// sameEpisodes is the script command `sameepisodes RUN RUN`: the two run folders hold the same
// episodes with the same status, score, turns and tokens (episodeFields), as a run and its
// replay, or shards merged and the run played whole, must.
func sameEpisodes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: sameepisodes RUN RUN")
	}
	a, err := readEpisodeFields(ts.MkAbs(args[0]))
	ts.Check(err)
	b, err := readEpisodeFields(ts.MkAbs(args[1]))
	ts.Check(err)
	if a != b {
		ts.Fatalf("the episodes of %s and %s differ:\n%s\n---\n%s", args[0], args[1], a, b)
	}
}

// trajectoryKindsCmd is the script command `trajectorykinds RUN KIND...`: every line of the
// run's trajectories is valid by the published schema, and the trajectories hold lines of
// each kind (turn, divergence, ...), as wantKinds checks in a Go test.
func trajectoryKindsCmd(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: trajectorykinds RUN KIND...")
	}
	var invalid []string
	got, err := trajectoryKinds(ts.MkAbs(args[0]), func(problem string) { invalid = append(invalid, problem) })
	ts.Check(err)
	if len(invalid) > 0 {
		ts.Fatalf("%s", strings.Join(invalid, "\n"))
	}
	var kinds []model.EventKind
	for _, k := range args[1:] {
		kinds = append(kinds, model.EventKind(k))
	}
	if missing := missingKinds(got, kinds); len(missing) > 0 {
		ts.Fatalf("the trajectories of %s have no %s line (they have %v)", args[0], strings.Join(missing, ", "), got)
	}
}

// hasPrefix is the script command `hasprefix FILE PREFIX`: FILE begins with the bytes of the
// file PREFIX, as a grown run's results.jsonl begins with the lines it had.
func hasPrefix(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: hasprefix FILE PREFIX")
	}
	if !bytes.HasPrefix([]byte(ts.ReadFile(args[0])), []byte(ts.ReadFile(args[1]))) {
		ts.Fatalf("%s does not begin with %s", args[0], args[1])
	}
}

// exitsMain is the program `exits CODE PROGRAM [ARGS...]` of the script tests, this test binary
// under another name (testscript.Main): it runs PROGRAM, passing on the signals that
// testscript's kill sends it, and succeeds when PROGRAM exits with CODE. testscript's exec
// tells only success from failure, and aa-grade's exit codes are part of its contract.
func exitsMain() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: exits CODE PROGRAM [ARGS...]")
		os.Exit(2)
	}
	want, err := strconv.Atoi(os.Args[1])
	if err != nil {
		fmt.Fprintf(os.Stderr, "exits: CODE: %v\n", err)
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[2], os.Args[3:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "exits: %v\n", err)
		os.Exit(2)
	}
	go func() {
		for s := range signals {
			_ = cmd.Process.Signal(s) // one the program, having ended, no longer takes
		}
	}()
	_ = cmd.Wait() // its exit code says how it ended
	if got := cmd.ProcessState.ExitCode(); got != want {
		fmt.Fprintf(os.Stderr, "exits: %s exited %d, want %d\n", os.Args[2], got, want)
		os.Exit(1)
	}
}
