package replay

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/harness/model"
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
			`{"kind":"turn","turn":1,"input":[{"role":"system","content":"s"},{"role":"user","content":"t"}],"reply":{"role":"assistant","content":"hi"},"usage":{"input":10,"output":2}}`+"\n"), 0o644)
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
	if err != nil || reply.Message.Content != "hi" || reply.Usage.Input != 10 || len(r.Divergences()) != 0 {
		t.Fatalf("replayed %+v, %v, divergences %v", reply, err, r.Divergences())
	}
	if _, err := r.Complete(ctx, req); !errors.Is(err, ErrEnded) {
		t.Fatalf("a call past the recording: %v", err)
	}
	other := model.WithEpisode(context.Background(), model.EpisodeID{Task: "Scenario-1", Repeat: 2})
	if _, err := r.Complete(other, req); err == nil || !strings.Contains(err.Error(), "Scenario-1 repeat 2") {
		t.Fatalf("an episode with no recording: %v", err)
	}
}
