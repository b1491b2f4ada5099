package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/loop"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// Episodes of the loop against a provider's fake API.

// TestAnthropicEpisodeSummarisedWithThinking: an episode of a thinking model whose history
// is summarised with turns to spare (no remaining-turns warning follows) goes on to its turn
// cap: no request after the summary ends on an assistant message (prefill, which thinking
// models refuse), and no reply is merged into a message of the harness's own so that its
// thinking no longer comes first. The replies call no tool, so the episode needs no sandbox.
func TestAnthropicEpisodeSummarisedWithThinking(t *testing.T) {
	const maxTurns = 22 // the turn after the summary is the last without a warning
	reply := func(n, inputTokens int) func(http.ResponseWriter) {
		return anthropicReply(fmt.Sprintf(`[{"type":"thinking","thinking":"step %d","signature":"sig-step %d"},{"type":"text","text":"Still looking (%d)."}]`, n, n, n), inputTokens)
	}
	for _, kind := range settings.Loops {
		t.Run(string(kind), func(t *testing.T) {
			api := newAnthropicAPI(reply(1, 900), // 90% of the base: the history is summarised
				anthropicReply(`[{"type":"thinking","thinking":"sum","signature":"sig-sum"},{"type":"text","text":"Goal: find the cause. Next steps: read the events."}]`, 950))
			for n := 2; n <= maxTurns; n++ {
				api.Append(reply(n, 100))
			}
			// The reference loop summarises against max tokens, the lenient one against the window.
			e := &loop.Episode{Model: newAnthropic(t, api), Sandbox: unusedSandbox{},
				Settings: settings.Settings{MaxTurns: maxTurns, Loop: kind, MaxTokens: 1000, ContextWindow: 1000}}
			out := e.Run(context.Background())
			if refused := api.Refused(); len(refused) != 0 {
				t.Errorf("the API refused %q", refused)
			}
			if out.Status != grader.StatusMaxTurns {
				t.Errorf("outcome %s (err %v), want %s", out.Status, out.Err, grader.StatusMaxTurns)
			}
			if out.Turns != maxTurns || out.Summaries != 1 {
				t.Errorf("%d turns and %d summaries, want %d and 1", out.Turns, out.Summaries, maxTurns)
			}
			if t.Failed() {
				t.FailNow()
			}
		})
	}
}

// unusedSandbox stands for the workspace of an episode whose replies run no command.
type unusedSandbox struct{}

func (unusedSandbox) Workdir() string { return "/home/user" }
func (unusedSandbox) Run(context.Context, string, time.Duration) (sandbox.Result, error) {
	return sandbox.Result{}, errors.New("no command expected")
}
func (unusedSandbox) ReadFile(context.Context, string, int64) ([]byte, error) {
	return nil, errors.New("no file expected")
}
func (unusedSandbox) CheckFile(context.Context, string) error { return errors.New("no file expected") }
func (unusedSandbox) Close() error                            { return nil }
