package runfolder

import (
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// SetSettings records in h the settings s the episodes are played with, the one way they go
// into run.json: its fields as they are, the loop named even when it is the default (a
// run.json without one was recorded before there was a choice, LoopName), and the prompt set
// as its sha256 (the set itself is PromptsFile, which Folder.WritePrompts writes).
func (h *Header) SetSettings(s settings.Settings) {
	h.Settings = s
	if h.Loop == "" {
		h.Loop = settings.LoopReference
	}
	h.Prompts, h.PromptSHA256 = nil, s.Prompts.SHA256()
}

// EpisodeSettings are the settings the episodes of the run in dir, whose run.json is h, were
// played with, the one way back from run.json (SetSettings): its fields, the lenient loop for
// a run recorded before there was a choice, and the prompt set the folder keeps. When the set
// cannot be read (ReadPrompts: ErrPromptsNotKept, a damaged file), the error says why and the
// other settings are returned all the same, for a caller that has another set to use.
func (h Header) EpisodeSettings(dir string) (settings.Settings, error) {
	s := h.Settings
	if s.Loop == "" {
		s.Loop = legacyLoop
	}
	var err error
	s.Prompts, err = ReadPrompts(dir, h.PromptSHA256)
	return s, err
}
