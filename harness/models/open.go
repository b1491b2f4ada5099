// Package models is what a --model value names: its settings (Resolve: a preset's, then the
// user's overrides) and the model itself (Open: a provider's, the built-in baseline or a
// recorded run played back), so that a command names the value and never chooses among them.
package models

import (
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/harness/models/baseline"
	"github.com/aa-grade/aa-grade/harness/models/provider"
	"github.com/aa-grade/aa-grade/harness/models/replay"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

// Open builds the model spec names: builtin/baseline, replay/RUN_DIR (the run folder's
// replies played back), else a provider's model (provider.New: its key and base URL read
// through getenv, opts its generation settings, retries and rate limiter; the baseline and a
// replay call no provider and take none of them). Its errors are model.ErrModelSpec; a spec
// in none of these forms is provider.ErrNotProvider too, which a caller may answer by
// listing the forms.
func Open(spec string, getenv func(string) string, opts provider.Options) (model.Model, error) {
	switch {
	case spec == BaselineSpec:
		return baseline.Model{}, nil
	case strings.HasPrefix(spec, "builtin/"):
		return nil, fmt.Errorf("%w: %q: the built-in model is %s", model.ErrModelSpec, spec, BaselineSpec)
	case strings.HasPrefix(spec, "replay/"):
		r, err := replay.New(strings.TrimPrefix(spec, "replay/"))
		if err != nil {
			return nil, err // no typed nil in the interface
		}
		return r, nil
	}
	return provider.New(spec, getenv, opts)
}
