package models

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/aa-grade/aa-grade/harness/models/baseline"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/models/replay"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// TestOpen: each form of a spec opens its kind of model, and a spec that names none is
// refused as a bad model, the one in no form as naming no provider too.
func TestOpen(t *testing.T) {
	getenv := func(name string) string { return map[string]string{"OPENAI_API_KEY": "sk-test"}[name] }
	m, err := Open(BaselineSpec, getenv, provider.Options{})
	if _, ok := m.(baseline.Model); !ok {
		t.Errorf("%s opened %T (%v), want the baseline", BaselineSpec, m, err)
	}
	if m, err := Open("openai/gpt-test", getenv, provider.Options{}); err != nil {
		t.Errorf("openai/gpt-test: %v", err)
	} else if _, ok := m.(*provider.OpenAIChat); !ok {
		t.Errorf("openai/gpt-test opened %T, want a Chat Completions provider", m)
	}
	recorded := t.TempDir()
	if err := os.WriteFile(filepath.Join(recorded, "run.json"), []byte(`{"model": "openai/recorded"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if m, err := Open("replay/"+recorded, getenv, provider.Options{}); err != nil {
		t.Errorf("a replay of a recorded run: %v", err)
	} else if _, ok := m.(*replay.Model); !ok {
		t.Errorf("a replay opened %T", m)
	}
	if _, err := Open("replay/"+t.TempDir(), getenv, provider.Options{}); !errors.Is(err, model.ErrModelSpec) {
		t.Errorf("a replay of a folder with no run: %v, want ErrModelSpec", err)
	}
	for _, spec := range []string{"builtin/other", "nonsense", "acme/m"} {
		m, err := Open(spec, getenv, provider.Options{})
		if !errors.Is(err, model.ErrModelSpec) {
			t.Errorf("%s: %v, want ErrModelSpec", spec, err)
		}
		if m != nil {
			t.Errorf("%s: a model (%T) with the error", spec, m)
		}
	}
	if _, err := Open("acme/m", getenv, provider.Options{}); !errors.Is(err, provider.ErrNotProvider) {
		t.Errorf("acme/m: %v, want ErrNotProvider", err)
	}
	if _, err := Open("replay/"+t.TempDir(), getenv, provider.Options{}); errors.Is(err, provider.ErrNotProvider) {
		t.Errorf("a replay's refusal says it names no provider: %v", err)
	}
}
