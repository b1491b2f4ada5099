package main

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/report"
	"github.com/aa-grade/aa-grade/harness/runner"
)

func newMergeCommand() *cli.Command {
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the run folders of the shards of one run (--shard I/N) into one",
		ArgsUsage: "RUN...",
		Description: "The new folder gets the reports too (results.parquet, report.md, report.html).\n" +
			"Runs of another configuration are refused, naming the fields that differ. Episodes no run\n" +
			"finished are listed (exit 1); an episode finished by two runs keeps the first run's result.\n\n" +
			"Example: aa-grade merge --out runs/opus runs/opus-1of2 runs/opus-2of2",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "out", Required: true, Sources: env("out"), Usage: "the new run folder"}},
		Action: runMerge,
	}
}

func runMerge(_ context.Context, cmd *cli.Command) error {
	runs := cmd.Args().Slice()
	if len(runs) == 0 {
		return usageErrorf("merge needs the run folders to join")
	}
	rep, err := runner.Merge(cmd.String("out"), runs)
	switch {
	case errors.Is(err, runner.ErrMergeConfig):
		return usageErrorf("%v", err)
	case errors.Is(err, runner.ErrMergeInto):
		return badResult(err)
	case err != nil:
		return runFolderError(err)
	}
	if _, err := report.WriteFolder(cmd.String("out"), nil); err != nil {
		return err
	}
	stdout, stderr := cmd.Root().Writer, cmd.Root().ErrWriter
	printSkipped(stderr, rep.Warnings)
	for _, e := range rep.Duplicates {
		printLine(stderr, "warning: %s repeat %d was finished by more than one run; kept the first", e.Task, e.Repeat)
	}
	renderGradeText(stdout, rep.Summary)
	fmt.Fprintf(stdout, "Run folder: %s\n", cmd.String("out"))
	if len(rep.Missing) > 0 {
		var names []string
		for _, e := range rep.Missing[:min(len(rep.Missing), 10)] {
			names = append(names, fmt.Sprintf("%s/%d", e.Task, e.Repeat))
		}
		if more := len(rep.Missing) - len(names); more > 0 {
			names = append(names, fmt.Sprintf("and %d more", more))
		}
		return badResult(fmt.Errorf("%d of %d episodes are not finished in any run (%s); run the shards that hold them again, then merge again",
			len(rep.Missing), rep.Episodes, strings.Join(names, ", ")))
	}
	return nil
}
