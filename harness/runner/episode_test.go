package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// fakeSandbox answers every command with an empty result and every read with a diagnosis,
// unless its agent is dead: then everything fails as a session fails once a reply is not its
// agent's.
type fakeSandbox struct {
	dead       bool
	submission string // "" for one root cause
}

var errForged = fmt.Errorf("%w: a reply with id 1 to the request of id 2", sandbox.ErrGuestDied)

func (s *fakeSandbox) Workdir() string { return sandbox.ReferenceWorkdir }
func (s *fakeSandbox) Close() error    { return nil }
func (s *fakeSandbox) Run(context.Context, string, time.Duration) (sandbox.Result, error) {
	if s.dead {
		return sandbox.Result{}, errForged
	}
	return sandbox.Result{}, nil
}
func (s *fakeSandbox) ReadFile(context.Context, string, int64) ([]byte, error) {
	if s.dead {
		return nil, errForged
	}
	if s.submission != "" {
		return []byte(s.submission), nil
	}
	return []byte(`{"contributing_factors":[{"name":"ns/Pod/p","reasoning":"r","evidence":"e"}]}`), nil
}
func (s *fakeSandbox) CheckFile(context.Context, string) error { return nil }

// firstDies is a backend whose first sandbox has a dead agent (none when started is 1 at
// first), and whose agents hand back submission.
type firstDies struct {
	mu         sync.Mutex
	started    int
	submission string
}

func (b *firstDies) Name() string     { return "fake" }
func (b *firstDies) Available() error { return nil }
func (b *firstDies) Start(context.Context, sandbox.Spec) (sandbox.Sandbox, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.started++
	return &fakeSandbox{dead: b.started == 1, submission: b.submission}, nil
}

// investigator runs one command, then submits.
type investigator struct{}

func (investigator) Complete(_ context.Context, req model.Request) (model.Reply, error) {
	call := model.ToolCall{ID: "a", Name: "code_exec", Arguments: `{"cmd": "ls"}`}
	for _, m := range req.Messages {
		if m.Role == model.RoleTool {
			call = model.ToolCall{ID: "b", Name: "finish", Arguments: `{"reason": "r", "paths": []}`}
		}
	}
	return model.Reply{Message: model.Message{ToolCalls: []model.ToolCall{call}}}, nil
}

// runFake runs tasks Scenario-1 and Scenario-2 once each on backend, one at a time, in a
// configuration that change (when not nil) alters.
func runFake(t *testing.T, backend sandbox.Backend, change func(*Config)) map[string]runfolder.Result {
	t.Helper()
	f, err := runfolder.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gt := []byte("groups: [{id: p, kind: Pod, namespace: ns, filter: [p], root_cause: true}]\n")
	cfg := Config{Folder: f, Description: Description{Dataset: "test", Model: "fake/m"}, Repeats: 1, Parallel: 1,
		Player: Loop{Model: investigator{}}, Backend: backend, Tools: &sandbox.Tools{},
		Settings: settings.Settings{MaxTurns: 5},
		Tasks:    []data.Task{{ID: "Scenario-1", Dir: t.TempDir(), GroundTruth: gt}, {ID: "Scenario-2", Dir: t.TempDir(), GroundTruth: gt}}}
	if change != nil {
		change(&cfg)
	}
	_, results, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	byTask := map[string]runfolder.Result{}
	for _, r := range results {
		byTask[r.Task] = r
	}
	return byTask
}

// TestGuestDeathIsAnErrorEpisode: an episode whose sandbox guest dies (or answers with a line
// it did not write) is recorded as an error, and the run goes on to the next one.
func TestGuestDeathIsAnErrorEpisode(t *testing.T) {
	results := runFake(t, &firstDies{}, nil)
	dead, next := results["Scenario-1"], results["Scenario-2"]
	if dead.Status != grader.StatusError {
		t.Errorf("the episode whose guest died: status %s, want error", dead.Status)
	}
	if !strings.Contains(dead.Error, sandbox.ErrGuestDied.Error()) {
		t.Errorf("the episode whose guest died: error %q, want it to say %q", dead.Error, sandbox.ErrGuestDied)
	}
	if dead.Turns != 1 {
		t.Errorf("the episode whose guest died: %d turns, want 1", dead.Turns)
	}
	if next.Status != grader.StatusOK {
		t.Errorf("the next episode: %+v", next)
	}
}

// TestEntitiesDroppedAreRecorded: results.jsonl and the summary count the entities of a
// submission past grader.MaxEntities.
func TestEntitiesDroppedAreRecorded(t *testing.T) {
	names := []string{"ns/Pod/p"}
	for i := range grader.MaxEntities + 2 {
		names = append(names, fmt.Sprintf("ns/Pod/noise-%d", i))
	}
	doc, _ := json.Marshal(names)
	results := runFake(t, &firstDies{started: 1, submission: string(doc)}, nil)
	r := results["Scenario-1"]
	if r.Status != grader.StatusOK {
		t.Fatalf("status %s, want ok: %s", r.Status, r.Error)
	}
	if r.EntitiesDropped != 3 {
		t.Errorf("%d entities dropped, want 3", r.EntitiesDropped)
	}
	if r.FP != grader.MaxEntities+2 {
		t.Errorf("%d false positives, want %d", r.FP, grader.MaxEntities+2)
	}
	if ep := runfolder.Summarise([]runfolder.Result{r}, "").PerTask[0].Episodes[0]; ep.EntitiesDropped != 3 {
		t.Fatalf("as summarised: %+v", ep)
	}
}

// TestRunTellsItsProgress: a run tells its plan, then each episode's start, turns (with the
// command asked for, each after its call's charge to the ledger) and end, in order when one
// episode runs at a time.
func TestRunTellsItsProgress(t *testing.T) {
	var told []string
	runFake(t, &firstDies{started: 1}, func(cfg *Config) {
		cfg.Progress = func(e Event) {
			switch e := e.(type) {
			case Planned:
				told = append(told, fmt.Sprintf("planned %d, %d finished", e.Total, len(e.Finished)))
			case EpisodeStarted:
				told = append(told, fmt.Sprintf("%s r%d started", e.Episode.Task, e.Episode.Repeat))
			case EpisodeTurn:
				told = append(told, fmt.Sprintf("%s r%d turn %d/%d %q", e.Episode.Task, e.Episode.Repeat, e.Turn, e.MaxTurns, e.Command))
			case EpisodeFinished:
				told = append(told, fmt.Sprintf("%s r%d %s", e.Result.Task, e.Result.Repeat, e.Result.Status))
			case Charged:
				told = append(told, fmt.Sprintf("%s r%d charged", e.Charge.Task, e.Charge.Repeat))
			default:
				told = append(told, fmt.Sprintf("%T", e))
			}
		}
	})
	var want []string
	want = append(want, "planned 2, 0 finished")
	for _, task := range []string{"Scenario-1", "Scenario-2"} {
		want = append(want, task+" r1 started", task+" r1 charged", task+` r1 turn 1/5 "ls"`, task+" r1 charged", task+` r1 turn 2/5 ""`, task+" r1 ok")
	}
	if got := strings.Join(told, "\n"); got != strings.Join(want, "\n") {
		t.Errorf("told\n%s\nwant\n%s", got, strings.Join(want, "\n"))
	}
}

// TestTrajectoryKeptPlainIsTold: an episode whose trajectory cannot be compressed keeps its
// result and its plain trajectory, and the run tells the failure.
func TestTrajectoryKeptPlainIsTold(t *testing.T) {
	var plain []TrajectoryPlain
	var dirs []string
	results := runFake(t, &firstDies{started: 1}, func(cfg *Config) {
		cfg.Progress = func(e Event) {
			switch e := e.(type) {
			case EpisodeStarted:
				// A folder where the compressed file's temporary copy goes: its creation fails.
				dir := runfolder.EpisodeDir(cfg.Folder.Dir, e.Episode)
				dirs = append(dirs, dir)
				if err := os.MkdirAll(filepath.Join(dir, runfolder.TrajectoryFile+".zst.tmp"), 0o755); err != nil {
					t.Fatal(err)
				}
			case TrajectoryPlain:
				plain = append(plain, e)
			}
		}
	})
	if len(plain) != 2 {
		t.Fatalf("told %d trajectories kept plain, want 2", len(plain))
	}
	if plain[0].Err == nil {
		t.Errorf("told no error for %v", plain[0].Episode)
	}
	if r := results["Scenario-1"]; r.Status != grader.StatusOK {
		t.Errorf("the episode whose trajectory stayed plain: status %s, want ok", r.Status)
	}
	if _, err := os.Stat(filepath.Join(dirs[0], runfolder.TrajectoryFile)); err != nil {
		t.Errorf("the plain trajectory: %v", err)
	}
}
