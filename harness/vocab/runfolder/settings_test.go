package runfolder

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
)

// TestHeaderBytesKept: a run.json as an earlier version wrote it (testdata/runs/opus; qwen's
// was written by hand, without the prices every version writes) reads and writes back byte
// for byte, the settings in the place they always had.
func TestHeaderBytesKept(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "testdata", "runs", "opus")
	want, err := os.ReadFile(filepath.Join(dir, HeaderFile))
	if err != nil {
		t.Fatal(err)
	}
	h, err := ReadHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), HeaderFile)
	if err := writeJSON(out, h); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(out); !bytes.Equal(got, want) {
		t.Errorf("written back as\n%s\nwant\n%s", got, want)
	}
}

// TestSetSettings: every setting goes where run.json always had it, with the type it always
// had there (the command timeout as Go writes a duration), the loop named even when it is the
// default, and the prompt set as its sha256 only.
func TestSetSettings(t *testing.T) {
	prompts := otherPrompts(t)
	h := Header{Model: "m", ReasoningEffort: "high", Sandbox: "docker"}
	h.SetSettings(settings.Settings{MaxTokens: 64000, ContextWindow: 200000, Loop: settings.LoopLenient, MaxTurns: 80,
		CommandTimeout: settings.Duration(90 * time.Second), Prompts: prompts})
	got, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"version":"","dataset":"","tasks":null,"repeats":0,"model":"m","reasoning_effort":"high",`+
		`"max_tokens":64000,"context_window":200000,"loop":"lenient","max_turns":80,"command_timeout":"1m30s","sandbox":"docker",`+
		`"prompt_sha256":"%s","started":"0001-01-01T00:00:00Z","prices":null}`, prompts.SHA256())
	if string(got) != want {
		t.Errorf("run.json\n%s\nwant\n%s", got, want)
	}
	if h.Prompts != nil {
		t.Error("the header holds the prompt set itself, not only its sha256")
	}
	var def Header
	def.SetSettings(settings.Settings{})
	if def.Loop != settings.LoopReference {
		t.Errorf("the default loop is recorded as %q, want %q", def.Loop, settings.LoopReference)
	}
}

// TestEpisodeSettings: the settings written into a folder read back as they were; a run.json
// without a loop followed the lenient one; a prompt set the folder does not keep is an error
// that leaves the other settings read.
func TestEpisodeSettings(t *testing.T) {
	dir := t.TempDir()
	f, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	temperature := 0.5
	played := settings.Settings{MaxTokens: 1000, Loop: settings.LoopReference, MaxTurns: 12,
		CommandTimeout: settings.Duration(time.Minute), Prompts: otherPrompts(t),
		Params: model.Params{Temperature: &temperature, Fields: map[string]json.RawMessage{"seed": json.RawMessage("7")}}}
	h := Header{Model: "m"}
	h.SetSettings(played)
	if err := f.WriteHeader(h); err != nil {
		t.Fatal(err)
	}
	if err := f.WritePrompts(played.Prompts.Format()); err != nil {
		t.Fatal(err)
	}
	read, err := ReadHeader(dir)
	if err != nil {
		t.Fatal(err)
	}
	got, err := read.EpisodeSettings(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got.Prompts.SHA256() != played.Prompts.SHA256() {
		t.Errorf("the prompt set read back has sha256 %.12s, want %.12s", got.Prompts.SHA256(), played.Prompts.SHA256())
	}
	got.Prompts, played.Prompts = nil, nil
	if !reflect.DeepEqual(got, played) {
		t.Errorf("read back %+v, want %+v", got, played)
	}

	legacy := Header{Model: "m", Settings: settings.Settings{MaxTurns: 100}, PromptSHA256: otherPrompts(t).SHA256()}
	got, err = legacy.EpisodeSettings(t.TempDir())
	if !errors.Is(err, ErrPromptsNotKept) {
		t.Errorf("a prompt set not kept: %v", err)
	}
	if got.Loop != settings.LoopLenient {
		t.Errorf("a run.json without a loop: %q, want %q", got.Loop, settings.LoopLenient)
	}
	if got.MaxTurns != 100 {
		t.Errorf("a prompt set not kept left max turns %d, want 100", got.MaxTurns)
	}
}

// otherPrompts is a prompt set that is not the built-in one.
func otherPrompts(t *testing.T) *promptset.Set {
	t.Helper()
	p, err := promptset.Builtin().WithTask("Investigate the snapshot another way; write {{output_path}}.")
	if err != nil {
		t.Fatal(err)
	}
	return p
}
