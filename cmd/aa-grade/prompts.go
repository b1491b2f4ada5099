package main

import (
	"context"
	"fmt"
	"os"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness"
)

func newPromptsCommand() *cli.Command {
	return &cli.Command{
		Name:  "prompts",
		Usage: "write out the prompt set a run would use: every text the model sees",
		Description: "With no flag it is the built-in set: save it, edit it, and run with aa-grade run --prompts FILE.\n" +
			"The first lines say the set's sha256, which run.json records as prompt_sha256. The format: docs/prompts.md.\n\n" +
			"Example: aa-grade prompts > my.prompts\n" +
			"         aa-grade prompts --prompts my.prompts --prompt-file task.txt   (check a set and see its hash)",
		Flags:  promptsFlags(),
		Action: runPrompts,
	}
}

// promptsFlags choose the prompt set, for run and prompts alike.
func promptsFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "prompts", Sources: env("prompts"),
			Usage: "the prompt set, every text the model sees, from a file (default: the built-in set, which aa-grade prompts writes out)"},
		&cli.StringFlag{Name: "prompt-file", Sources: env("prompt_file"),
			Usage: "replaces only the task prompt of the set, with the placeholders of its task key ({{workdir}}, {{output_path}}, ...)"},
	}
}

// loadPrompts reads the set the flags choose; any problem with it is a usage error naming
// the file and the line.
func loadPrompts(cmd *cli.Command) (*harness.Prompts, error) {
	prompts := harness.BuiltinPrompts()
	if path := cmd.String("prompts"); path != "" {
		doc, err := os.ReadFile(path)
		if err != nil {
			return nil, usageErrorf("--prompts: %v", err)
		}
		if prompts, err = harness.ParsePrompts(doc); err != nil {
			return nil, usageErrorf("--prompts %s: %v", path, err)
		}
	}
	if path := cmd.String("prompt-file"); path != "" {
		task, err := os.ReadFile(path)
		if err != nil {
			return nil, usageErrorf("--prompt-file: %v", err)
		}
		if prompts, err = prompts.WithTask(string(task)); err != nil {
			return nil, usageErrorf("--prompt-file %s: %v", path, err)
		}
	}
	return prompts, nil
}

func runPrompts(_ context.Context, cmd *cli.Command) error {
	if err := noArgs(cmd); err != nil {
		return err
	}
	prompts, err := loadPrompts(cmd)
	if err != nil {
		return err
	}
	w := cmd.Root().Writer
	fmt.Fprintf(w, "# An aa-grade prompt set: every text the model sees (the format: docs/prompts.md).\n"+
		"# Run with it: aa-grade run --prompts FILE. run.json records it as\n# prompt_sha256: %s\n\n", prompts.SHA256())
	if _, err := w.Write(prompts.Format()); err != nil {
		return fmt.Errorf("write the prompt set: %w", err)
	}
	return nil
}
