package main

import (
	"context"
	"fmt"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
)

// promptsOptions are the flags of aa-grade prompts: the set, and where the reference
// library's texts come from.
type promptsOptions struct {
	promptOptions
	fromStirrup string // a copy of Stirrup 0.1.9: source tree, installed package or wheel
}

func (o *promptsOptions) flags() []cli.Flag {
	return append(o.promptOptions.flags(), &cli.StringFlag{Name: "from-stirrup", Destination: &o.fromStirrup,
		Usage: "start from the texts of your own copy of Stirrup " + promptset.StirrupVersion + " (a source tree, an " +
			"installed package folder or a wheel) instead of the built-in set"})
}

// Validate refuses two starting sets at once.
func (o *promptsOptions) Validate() error {
	if o.fromStirrup != "" && o.set != "" {
		return usageErrorf("--from-stirrup and --prompts: give one set to start from")
	}
	return nil
}

func newPromptsCommand() *cli.Command {
	var opts promptsOptions
	return &cli.Command{
		Name:  "prompts",
		Usage: "write out the prompt set a run would use: every text the model sees",
		Description: "With no flag it is the built-in set: save it, edit it, and run with aa-grade run --prompts FILE.\n" +
			"The first lines say the set's sha256, which run.json records as prompt_sha256. The format: docs/prompts.md.\n\n" +
			"With --from-stirrup it is the reference library's texts, read from your own copy of " +
			"Stirrup " + promptset.StirrupVersion + "\n" +
			"(aa-grade ships none of them), with the built-in task prompt and the refusals Stirrup does not make.\n\n" +
			"Example: aa-grade prompts > my.prompts\n" +
			"         aa-grade prompts --prompts my.prompts --prompt-file task.txt   (check a set and see its hash)\n" +
			"         aa-grade prompts --from-stirrup ~/src/Stirrup > stirrup.prompts",
		Flags:  opts.flags(),
		Action: action(&opts, runPrompts),
	}
}

func runPrompts(_ context.Context, opts promptsOptions, args []string, con console) error {
	if err := noArgs("prompts", args); err != nil {
		return err
	}
	var base *promptset.Set
	if opts.fromStirrup != "" {
		var err error
		if base, err = promptset.FromStirrup(opts.fromStirrup); err != nil {
			return usageErrorf("--from-stirrup %s: %w", opts.fromStirrup, err)
		}
	}
	prompts, err := opts.load(base)
	if err != nil {
		return err
	}
	w := con.out
	fmt.Fprintf(w, "# An aa-grade prompt set: every text the model sees (the format: docs/prompts.md).\n"+
		"# Run with it: aa-grade run --prompts FILE. run.json records it as\n# prompt_sha256: %s\n\n", prompts.SHA256())
	if _, err := w.Write(prompts.Format()); err != nil {
		return fmt.Errorf("write the prompt set: %w", err)
	}
	return nil
}
