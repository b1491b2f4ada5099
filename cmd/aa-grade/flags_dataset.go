// The flags that choose tasks, of every command that reads a dataset (run, grade, analyze,
// data), so that a dataset spec and a task list mean the same in each.

package main

import (
	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
)

// datasetFlag is --dataset of the commands that read tasks from any source: the Hub, a
// folder or the demo.
func datasetFlag(dst *string) cli.Flag {
	return &cli.StringFlag{Name: "dataset", Value: data.DefaultSpec, Destination: dst, Sources: env("dataset"),
		Usage: "dataset: hf:OWNER/NAME[@REV], demo (built in, offline), a folder in the Hub layout (sre/data.jsonl), " +
			"a folder of task folders, or one task folder"}
}

// tasksFlag is --tasks: a subset of the dataset's tasks, by id or number.
func tasksFlag(dst *[]string) cli.Flag {
	return &cli.StringSliceFlag{Name: "tasks", Destination: dst, Sources: env("tasks"),
		Usage: "only these tasks, comma-separated (Scenario-2 or 2)"}
}
