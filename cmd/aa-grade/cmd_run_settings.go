package main

import (
	"github.com/aa-grade/aa-grade/harness/models"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// episodeSettings are what every episode of the run is played with: the one way from run's
// flags to the settings, which the runner hands to either kind of episode and run.json
// records. The flags give the turn cap, the command timeout, the loop and the model's
// parameters (o.episode); the output cap and the context window are the model's (ms: the
// flags', else a preset's, else the defaults); the prompt set is the one the flags load. A
// replay's recording (recorded, nil for a run of a model) gives what the flags do not set, so
// that replaying needs no flag but --model and summarises where the recording did (a
// recording without a cap or window leaves the model's), and records the parameters the
// recording was made with.
func episodeSettings(o runOptions, recorded *settings.Settings, ms models.Settings,
	prompts *promptset.Set) settings.Settings {
	s := o.episode
	s.MaxTokens, s.Prompts = ms.MaxTokens, prompts
	window := ms.ContextWindow
	if r := recorded; r != nil {
		if !o.isSet("max-turns") {
			s.MaxTurns = r.MaxTurns
		}
		if !o.isSet("loop") {
			s.Loop = r.Loop
		}
		if !o.isSet("max-tokens") && r.MaxTokens > 0 {
			s.MaxTokens = r.MaxTokens
		}
		if !o.isSet("context-window") && r.ContextWindow > 0 {
			window = r.ContextWindow
		}
		if s.Params.IsZero() {
			s.Params = r.Params
		}
	}
	// The reference loop summarises against the output cap, so a run of it records no window.
	if s.Loop == settings.LoopLenient {
		s.ContextWindow = window
	}
	return s
}
