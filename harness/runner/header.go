package runner

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/version"
)

// ErrConfigChanged marks a resume whose configuration differs from the run folder's.
var ErrConfigChanged = errors.New("the run folder holds a run with another configuration")

// ErrRebuiltHeader marks, beside ErrConfigChanged, a refused resume of a run whose run.json was
// rebuilt without what the folder could not tell (Header.Unknown): no flag can match a field
// named unknown, only run.json told its value can.
var ErrRebuiltHeader = errors.New("its run.json was rebuilt, and does not know the fields named unknown")

// CheckResume refuses a resume of cfg.Folder with another configuration or environment (the
// sandbox's tools, cfg.Tools) than the run it holds, before anything is written: so that a
// command can refuse before it says anything of the run. Run checks the same.
func CheckResume(cfg Config) error {
	if cfg.Tools == nil {
		return errors.New("check a resume: the sandbox's tools are not known yet")
	}
	_, err := header(cfg, *cfg.Tools)
	return err
}

// writeHeader writes run.json for cfg and the environment the probe found, and the prompt set
// beside it; a resume with another configuration or environment is refused.
func writeHeader(cfg Config, tools sandbox.Tools) error {
	h, err := header(cfg, tools)
	if err != nil {
		return err
	}
	if err := cfg.Folder.WriteHeader(h); err != nil {
		return err
	}
	return cfg.Folder.WritePrompts(cfg.played().Prompts.Format())
}

// header is run.json for cfg and tools, keeping the start time and the rate limits of the run
// it resumes or grows; ErrConfigChanged, naming the differences, when that run was another.
func header(cfg Config, tools sandbox.Tools) (runfolder.Header, error) {
	d := cfg.Description
	h := runfolder.Header{
		Version:         version.Version,
		Revision:        version.Revision,
		Dataset:         d.Dataset,
		DatasetCommit:   d.DatasetCommit,
		Repeats:         cfg.Repeats,
		Shard:           cfg.Shard.String(),
		Model:           d.Model,
		BaseURL:         d.BaseURL,
		ReasoningEffort: d.ReasoningEffort,
		Sandbox:         cfg.Backend.Name(),
		Prices:          cfg.Prices,
		Judge:           cfg.Judge,
		Started:         time.Now().UTC(),
		Agent:           d.Agent,
	}
	h.SetSettings(cfg.played())
	for _, t := range cfg.Tasks {
		h.Tasks = append(h.Tasks, t.ID)
	}
	h.Selection = d.Selection
	h.Image, h.ImageDigest = sandbox.ImageOf(cfg.Backend)
	h.Python = tools.Python
	if prev := cfg.Folder.Prev; prev != nil {
		if diff := prev.Header.ResumeDifferences(h); len(diff) > 0 {
			err := fmt.Errorf("%w (%s)", ErrConfigChanged, strings.Join(diff, "; "))
			if len(prev.Header.Unknown) > 0 {
				err = fmt.Errorf("%w; %w", err, ErrRebuiltHeader)
			}
			return h, err
		}
		// The rate limits stay as the run before recorded them until this one records its own.
		h.Started, h.RateLimits = prev.Header.Started, prev.Header.RateLimits
	}
	return h, nil
}
