package provider

import (
	"errors"
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// ErrNotProvider marks, beside ErrModelSpec, a spec in none of the providers' forms, which a
// caller that builds other models (the run: builtin/baseline, replay/RUN_DIR) may know.
var ErrNotProvider = errors.New("names no provider")

// specForms are the forms of a model spec that names a provider, for help texts and errors.
var specForms = []string{"openai/MODEL", "openai-responses/MODEL", "anthropic/MODEL", "google/MODEL",
	"openrouter/ORG/MODEL", "openai-api/PROVIDER/MODEL"}

// providerAPIs are the API each provider's requests follow, by the spec's first word.
var providerAPIs = map[string]string{"openai": "chat", "openai-responses": "responses", "anthropic": "anthropic",
	"google": "gemini", "openrouter": "chat", "openai-api": "chat"}

// MissingVariableError is the refusal of a spec whose provider needs a variable the
// environment lacks (its key, or an openai-api provider's base URL): a caller that calls no
// model (a dry run) can still say which variable the run will need. It is an ErrModelSpec.
type MissingVariableError struct {
	Spec, Name string
}

func (e *MissingVariableError) Error() string {
	return fmt.Sprintf("%v: %s needs %s in the environment", model.ErrModelSpec, e.Spec, e.Name)
}

// Is makes the error an ErrModelSpec.
func (e *MissingVariableError) Is(target error) bool { return target == model.ErrModelSpec }

// SpecForms lists the forms of a spec New builds: "openai/MODEL, ..., openai-api/PROVIDER/MODEL".
func SpecForms() string { return strings.Join(specForms, ", ") }

// New builds the model a --model value names (SpecForms), reading keys and base URLs through
// getenv: openai/MODEL (OPENAI_API_KEY, OPENAI_BASE_URL), openai-responses/MODEL (the same, for
// the Responses API), anthropic/MODEL (ANTHROPIC_API_KEY, ANTHROPIC_BASE_URL), google/MODEL
// (GEMINI_API_KEY, GOOGLE_GEMINI_BASE_URL: Google's Gemini API), openrouter/ORG/MODEL
// (OPENROUTER_API_KEY), openai-api/PROVIDER/MODEL (<PROVIDER>_BASE_URL, and <PROVIDER>_API_KEY
// when the server wants one). builtin/baseline and replay/RUN_DIR are
// built where the run builds its model: they call no provider.
// opts carries the generation settings and the recorder; its Model, BaseURL and APIKey are
// filled here.
func New(spec string, getenv func(string) string, opts Options) (model.Model, error) {
	provider, rest, ok := strings.Cut(spec, "/")
	if !ok || rest == "" {
		return nil, fmt.Errorf("%w: %q %w (expected %s)", model.ErrModelSpec, spec, ErrNotProvider, SpecForms())
	}
	key := func(name string) (string, error) {
		if v := strings.TrimSpace(getenv(name)); v != "" {
			return v, nil
		}
		return "", &MissingVariableError{Spec: spec, Name: name}
	}
	// base sets the base URL from the variable name, else fallback, and says which.
	base := func(name, fallback string) {
		if v := strings.TrimRight(strings.TrimSpace(getenv(name)), "/"); v != "" {
			opts.BaseURL, opts.BaseURLSource = v, "set by "+name
			return
		}
		opts.BaseURL, opts.BaseURLSource = fallback, "the default; "+name+" sets another"
	}
	if err := checkParams(providerAPIs[provider], opts.Params); err != nil {
		return nil, fmt.Errorf("%s: %w", spec, err)
	}
	var err error
	opts.Model = rest
	switch provider {
	case "openai", "openai-responses":
		base("OPENAI_BASE_URL", "https://api.openai.com/v1")
		if opts.APIKey, err = key("OPENAI_API_KEY"); err != nil {
			return nil, err
		}
		if provider == "openai-responses" {
			return &OpenAIResponses{Options: opts}, nil
		}
		return &OpenAIChat{Options: opts}, nil
	case "anthropic":
		base("ANTHROPIC_BASE_URL", "https://api.anthropic.com")
		if opts.APIKey, err = key("ANTHROPIC_API_KEY"); err != nil {
			return nil, err
		}
		return &Anthropic{Options: opts}, nil
	case "google":
		base("GOOGLE_GEMINI_BASE_URL", "https://generativelanguage.googleapis.com")
		if opts.APIKey, err = key("GEMINI_API_KEY"); err != nil {
			return nil, err
		}
		return &Gemini{Options: opts}, nil
	case "openrouter":
		if !strings.Contains(rest, "/") {
			return nil, fmt.Errorf("%w: %q: expected openrouter/ORG/MODEL", model.ErrModelSpec, spec)
		}
		base("OPENROUTER_BASE_URL", "https://openrouter.ai/api/v1")
		if opts.APIKey, err = key("OPENROUTER_API_KEY"); err != nil {
			return nil, err
		}
		return &OpenAIChat{Options: opts}, nil
	case "openai-api":
		name, id, ok := strings.Cut(rest, "/")
		if !ok || name == "" || id == "" {
			return nil, fmt.Errorf("%w: %q: expected openai-api/PROVIDER/MODEL", model.ErrModelSpec, spec)
		}
		prefix := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
		if opts.BaseURL, err = key(prefix + "_BASE_URL"); err != nil {
			return nil, err
		}
		opts.BaseURL, opts.BaseURLSource = strings.TrimRight(opts.BaseURL, "/"), "set by "+prefix+"_BASE_URL"
		opts.Model, opts.APIKey = id, getenv(prefix+"_API_KEY") // local servers often need no key
		return &OpenAIChat{Options: opts}, nil
	}
	return nil, fmt.Errorf("%w: %q %w: unknown provider %q (expected %s)", model.ErrModelSpec, spec, ErrNotProvider,
		provider, SpecForms())
}
