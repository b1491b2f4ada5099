// The flags that choose the prompt set, of run (which plays it) and prompts (which writes it
// out), so that both read a set, and report its faults, the same way.

package main

import (
	"os"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
)

// promptOptions choose the prompt set, for run and prompts alike.
type promptOptions struct {
	flagsSet
	set, task string // files; "" for the built-in set, its own task prompt
}

func (o *promptOptions) flags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "prompts", Destination: &o.set, Sources: env("prompts"),
			DefaultText: "the built-in set, which aa-grade prompts writes out",
			Usage:       "the prompt set, every text the model sees, from a file"},
		&cli.StringFlag{Name: "prompt-file", Destination: &o.task, Sources: env("prompt-file"),
			Usage: "replaces only the task prompt of the set, with the placeholders of its task key ({{workdir}}, " +
				"{{output_path}}, ...)"},
	}
}

// Validate checks nothing before the files are read (load does, naming file and line).
func (o *promptOptions) Validate() error { return nil }

// load reads the set the flags choose, starting from base (nil: the built-in set); any
// problem with it is a usage error naming the file and the line (an unknown {{placeholder}} too).
func (o promptOptions) load(base *promptset.Set) (*promptset.Set, error) {
	prompts := base
	if prompts == nil {
		prompts = promptset.Builtin()
	}
	if o.set != "" {
		doc, err := os.ReadFile(o.set)
		if err != nil {
			return nil, usageErrorf("--prompts: %w", err)
		}
		if prompts, err = promptset.Parse(doc); err != nil {
			return nil, usageErrorf("--prompts %s: %w", o.set, err)
		}
	}
	if o.task != "" {
		task, err := os.ReadFile(o.task)
		if err != nil {
			return nil, usageErrorf("--prompt-file: %w", err)
		}
		if prompts, err = prompts.WithTask(string(task)); err != nil {
			return nil, usageErrorf("--prompt-file %s: %w", o.task, err)
		}
	}
	return prompts, nil
}
