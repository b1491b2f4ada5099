// Package settings is what an episode is played with, whichever kind plays it (aa-grade's loop
// or an agent through the gateway): its turn cap, output cap, loop, context window, command
// timeout, the model's parameters and prompt set. They are said once, here among the
// vocabularies, so that run.json holds them as they are (runfolder.Header embeds Settings) and
// the flags, the runner and both kinds of episode carry the same value, each setting with one
// type on the whole way.
package settings

import (
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
)

// Settings are what an episode is played with. run.json holds them: runfolder.Header embeds
// them, so their fields are run.json's, in its order (adding one adds it to run.json, and to
// the header's Differences only when a resume must refuse its change). A zero field is the
// default of whoever plays the episode, as each field says.
type Settings struct {
	// MaxTokens is the output cap the model's client sends on every call (0: the provider's
	// own; the loop then summarises against loop.DefaultMaxTokens). The reference loop
	// summarises when the last reply's prompt and completion tokens reach 70% of it, as
	// Stirrup does with its client's max_tokens.
	MaxTokens int64 `json:"max_tokens,omitempty"`
	// ContextWindow, in tokens, sets when the lenient loop summarises (at 70%); 0 never. The
	// reference loop does not use it, and a run of it records none.
	ContextWindow int64 `json:"context_window,omitempty"`
	// Loop is the agent loop the episodes follow ("": the reference loop). In run.json, a run
	// recorded before there was a choice has none: it followed the lenient loop, which
	// runfolder.Header.LoopName says.
	Loop Loop `json:"loop,omitempty"`
	// MaxTurns caps the model calls of an episode (0: loop.DefaultMaxTurns in the loop, no cap
	// of aa-grade's on an agent).
	MaxTurns int `json:"max_turns"`
	// CommandTimeout bounds each command the loop runs in the sandbox (0: the sandbox's
	// default), and is what the prompt says a command may take (an agent runs its commands
	// itself).
	CommandTimeout Duration `json:"command_timeout"`
	// Params are the user's own parameters of the model's requests (temperature, top_p, extra
	// fields and headers); none for the loop's requests as the reference harness sends them.
	// The loop's model sends them; an agent's requests are its own, so an agent run has none.
	Params model.Params `json:"model_params,omitzero"`
	// Prompts are every text the model sees (nil: the built-in set). run.json holds their
	// sha256 (prompt_sha256) and the run folder the set itself (runfolder.PromptsFile), so a
	// Header's own is always nil: runfolder.Header.SetSettings and EpisodeSettings carry it.
	Prompts *promptset.Set `json:"-"`
}
