package baseline

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/internal/testsupport/agenttest"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/sandbox"
)

// The test binary doubles as the sandbox agent, as aa-grade does.
func TestMain(m *testing.M) { agenttest.Main(m) }

// TestBaselineOnTheDemo runs builtin/baseline end to end over every demo task, through the
// real sandbox and loop, and grades it: the goal is at least 0.8.
func TestBaselineOnTheDemo(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ds, err := data.Open(context.Background(), data.DemoSpec, data.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backend := agenttest.Backend(t)
	exe, _ := os.Executable()
	var total float64
	for _, task := range ds.Tasks {
		scratch := filepath.Join(t.TempDir(), "scratch")
		if err := os.Mkdir(scratch, 0o755); err != nil {
			t.Fatal(err)
		}
		sb, err := backend.Start(context.Background(), sandbox.Spec{Snapshot: task.Dir, Hide: []string{data.GroundTruthFile},
			Scratch: scratch, Agent: exe, AgentArg: []string{sandbox.AgentCommand}})
		if err != nil {
			t.Fatal(err)
		}
		ep := &harness.Episode{Model: Model{}, Sandbox: sb, MaxTurns: 100}
		out := ep.Run(context.Background())
		sb.Close()
		if out.Status != harness.StatusOK {
			t.Errorf("%s: %s after %d turns: %v", task.ID, out.Status, out.Turns, out.Err)
			continue
		}
		gt, err := grader.ParseGroundTruth(task.GroundTruth)
		if err != nil {
			t.Fatal(err)
		}
		sub, err := grader.ReadSubmission(out.Submission)
		if err != nil {
			t.Fatal(err)
		}
		score := gt.Score(sub.Names)
		t.Logf("%s: %.2f with %v in %d turns", task.ID, score.Score, sub.Names, out.Turns)
		total += score.Score
	}
	if mean := total / float64(len(ds.Tasks)); mean < 0.8 {
		t.Fatalf("baseline scores %.3f on the demo, below 0.8", mean)
	}
}
