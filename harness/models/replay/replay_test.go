package replay

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

func TestReplayFailures(t *testing.T) {
	if _, err := New(t.TempDir()); !errors.Is(err, model.ErrModelSpec) {
		t.Fatalf("a folder with no run.json: %v", err)
	}
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"model": "openai/recorded"}`), 0o644)
	ep := filepath.Join(dir, "episodes", "Scenario-1", "1")
	os.MkdirAll(ep, 0o755)
	os.WriteFile(filepath.Join(ep, "trajectory.jsonl"), []byte(
		`{"kind":"request","body":{}}`+"\n"+
			`{"kind":"turn","turn":1,"input":[{"role":"system","content":"s"},{"role":"user","content":"t"}],"reply":{"role":"assistant","content":"hi"},"usage":{"input":10,"output":2},"cut":true}`+"\n"), 0o644)
	r, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	req := model.Request{Messages: []model.Message{{Role: "system", Content: "s"}, {Role: "user", Content: "t"}}}
	if _, err := r.Complete(context.Background(), req); err == nil || !strings.Contains(err.Error(), "names no episode") {
		t.Fatalf("a call outside an episode: %v", err)
	}
	ctx := model.WithEpisode(context.Background(), model.EpisodeID{Task: "Scenario-1", Repeat: 1})
	reply, err := r.Complete(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if c := reply.Message.Content; c != "hi" {
		t.Errorf("replayed content %q, want hi", c)
	}
	if n := reply.Usage.Input; n != 10 {
		t.Errorf("replayed %d input tokens, want 10", n)
	}
	if !reply.Cut {
		t.Errorf("the replayed reply is not cut, as the recorded one was")
	}
	if d := r.Divergences(); len(d) != 0 {
		t.Errorf("divergences %v, want none", d)
	}
	if t.Failed() {
		t.Fatalf("replayed %+v", reply)
	}

	if _, err := r.Complete(ctx, req); !errors.Is(err, ErrEnded) {
		t.Fatalf("a call past the recording: %v", err)
	}
	agentRun := t.TempDir()
	os.WriteFile(filepath.Join(agentRun, "run.json"), []byte(`{"model": "openai/recorded", "agent": {"spec": "codex"}}`), 0o644)
	if _, err := New(agentRun); !errors.Is(err, model.ErrModelSpec) || !strings.Contains(err.Error(), "agent run (codex)") {
		t.Fatalf("an agent run: %v", err)
	}
	other := model.WithEpisode(context.Background(), model.EpisodeID{Task: "Scenario-1", Repeat: 2})
	if _, err := r.Complete(other, req); err == nil || !strings.Contains(err.Error(), "Scenario-1 repeat 2") {
		t.Fatalf("an episode with no recording: %v", err)
	}
}

// TestReplayDivergenceShowsWhere: two messages that share a long beginning (a tool's output)
// and differ after it are reported at the character where they part, with the text around
// it in both, not their identical first characters.
func TestReplayDivergenceShowsWhere(t *testing.T) {
	shared := strings.Repeat("pod/frontend-7d9 Running\n", 20) // 500 characters
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "run.json"), []byte(`{"model": "openai/recorded"}`), 0o644)
	ep := filepath.Join(dir, "episodes", "Scenario-1", "1")
	os.MkdirAll(ep, 0o755)
	turn, _ := json.Marshal(runfolder.TurnRecord{Kind: "turn", Turn: 1, Input: []model.Message{{Role: "system", Content: "s"},
		{Role: "user", Content: shared + "pod/cart-5f CrashLoopBackOff\nend"}}, Reply: model.Message{Role: "assistant", Content: "hi"}})
	os.WriteFile(filepath.Join(ep, "trajectory.jsonl"), append(turn, '\n'), 0o644)
	r, err := New(dir)
	if err != nil {
		t.Fatal(err)
	}
	ctx := model.WithEpisode(context.Background(), model.EpisodeID{Task: "Scenario-1", Repeat: 1})
	req := model.Request{Messages: []model.Message{{Role: "system", Content: "s"}, {Role: "user", Content: shared + "pod/cart-5f Running\nend"}}}
	if _, err := r.Complete(ctx, req); err != nil {
		t.Fatal(err)
	}
	ds := r.Divergences()
	want := `message 2 (user) differs at character 513 (line 21) of 532 recorded, 523 now: ` +
		`recorded ..."ng\npod/frontend-7d9 Running\npod/cart-5f CrashLoopBackOff\nend", ` +
		`now ..."ng\npod/frontend-7d9 Running\npod/cart-5f Running\nend"`
	if len(ds) != 1 || ds[0].Detail != want {
		t.Fatalf("divergence:\n%+v\nwant detail\n%s", ds, want)
	}
}

// TestWhereDiffer: the window is cut at both ends of a long text, a text that ends where the
// other goes on shows the rest of the longer, and characters are runes, not bytes.
func TestWhereDiffer(t *testing.T) {
	for _, c := range []struct{ recorded, now, want string }{
		{strings.Repeat("a", 100) + "X" + strings.Repeat("b", 100), strings.Repeat("a", 100) + "Y" + strings.Repeat("b", 100),
			`at character 101 (line 1) of 201 recorded, 201 now: recorded ..."` + strings.Repeat("a", 40) + "X" + strings.Repeat("b", 39) + `"..., ` +
				`now ..."` + strings.Repeat("a", 40) + "Y" + strings.Repeat("b", 39) + `"...`},
		{"héllo", "héllo world", `at character 6 (line 1) of 5 recorded, 11 now: recorded "héllo", now "héllo world"`},
		{"x", "y", `at character 1 (line 1) of 1 recorded, 1 now: recorded "x", now "y"`},
	} {
		if got := whereDiffer(c.recorded, c.now); got != c.want {
			t.Errorf("whereDiffer(%q, %q):\n got %s\nwant %s", c.recorded, c.now, got, c.want)
		}
	}
}
