package agentrun_test

import (
	"net/http/httptest"
	"os/exec"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/agentrun"
	"github.com/aa-grade/aa-grade/harness/episode/agents"
	"github.com/aa-grade/aa-grade/harness/episode/gateway"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakecli"
)

// TestGeminiCLITurnCap: the real Gemini CLI refused its second call past --max-turns 1 (a 400
// in Google's shape, which it does not retry) gives up, and the episode ends at the cap.
func TestGeminiCLITurnCap(t *testing.T) {
	if _, err := exec.LookPath("gemini"); err != nil {
		t.Skip("gemini is not installed (TestRealCLIs requires it under CI)")
	}
	a, err := agents.Parse("gemini-cli")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&fakecli.Server{Script: fakecli.Script{Command: "cat alerts.json", Final: "done"}})
	defer srv.Close()
	out, rec := play(t, backends(t)[0], a, gateway.Gemini, srv.URL, func(e *agentrun.Episode) { e.MaxTurns = 1 })
	if out.Status != grader.StatusMaxTurns {
		t.Errorf("status %s (%v), want max_turns; the agent printed %+v", out.Status, out.Err, rec.ended)
	}
	if out.Turns != 1 {
		t.Errorf("%d model calls passed on, want 1", out.Turns)
	}
}
