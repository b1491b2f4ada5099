package main

import (
	"cmp"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/runner"
	"github.com/aa-grade/aa-grade/harness/vocab/ratelimit"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/english"
)

// mergeOptions are the flags of aa-grade merge.
type mergeOptions struct {
	flagsSet
	out string
}

func (o *mergeOptions) Validate() error { return checkOutPath("out", o.out) }

func newMergeCommand() *cli.Command {
	var opts mergeOptions
	return &cli.Command{
		Name:      "merge",
		Usage:     "join the run folders of the shards of one run (--shard I/N) into one",
		ArgsUsage: "RUN...",
		Description: "The new folder gets the judge's answers (judge/) and the reports too (results.parquet,\n" +
			"report.md, report.html); shards whose judge answered one question two ways are refused.\n" +
			"Runs of another configuration are refused, naming the fields that differ. Episodes no run\n" +
			"finished are listed (exit 1); an episode finished by two runs keeps the first run's result.\n\n" +
			"Example: aa-grade merge --out runs/opus runs/opus-1of2 runs/opus-2of2",
		Flags:  []cli.Flag{&cli.StringFlag{Name: "out", Required: true, Destination: &opts.out, Usage: "the new run folder"}},
		Action: action(&opts, runMerge),
	}
}

func runMerge(_ context.Context, opts mergeOptions, runs []string, con console) error {
	if len(runs) == 0 {
		return usageErrorf("merge needs the run folders to join")
	}
	if err := distinctFolders(runs); err != nil {
		return err
	}
	rep, err := runner.Merge(opts.out, runs)
	if err != nil {
		return err
	}
	if _, err := finishRun(con.err, opts.out, nil, ratelimit.Status{}, nil); err != nil {
		return err
	}
	printSkipped(con.err, rep.Warnings)
	slices.SortFunc(rep.Duplicates, func(a, b runfolder.Episode) int {
		return cmp.Or(strings.Compare(a.Task, b.Task), cmp.Compare(a.Repeat, b.Repeat))
	})
	for _, e := range rep.Duplicates {
		printLine(con.err, "warning: %s repeat %d was finished by more than one run; kept the first", e.Task, e.Repeat)
	}
	renderGradeText(con.out, rep.Summary)
	fmt.Fprintf(con.out, "Run folder: %s\n", opts.out)
	if len(rep.Missing) > 0 {
		var names []string
		for _, e := range rep.Missing[:min(len(rep.Missing), 10)] {
			names = append(names, fmt.Sprintf("%s/%d", e.Task, e.Repeat))
		}
		if more := len(rep.Missing) - len(names); more > 0 {
			names = append(names, fmt.Sprintf("and %d more", more))
		}
		return badResult(fmt.Errorf(
			"%d of %s are not finished in any run (%s); run the shards that hold them again, then merge again", len(rep.Missing),
			english.Count(rep.Episodes, "episode"), strings.Join(names, ", ")))
	}
	return nil
}

// distinctFolders refuses a run folder named twice (by two paths, or through a link): merging
// it with itself would only report each of its episodes as finished twice.
func distinctFolders(runs []string) error {
	seen := map[string]string{}
	for _, r := range runs {
		key, err := filepath.EvalSymlinks(r)
		if err != nil {
			key = filepath.Clean(r) // a folder that does not exist: Merge says so
		}
		if abs, err := filepath.Abs(key); err == nil {
			key = abs
		}
		if first, ok := seen[key]; ok {
			return usageErrorf("merge: %s and %s are the same run folder; name each run once", first, r)
		}
		seen[key] = r
	}
	return nil
}
