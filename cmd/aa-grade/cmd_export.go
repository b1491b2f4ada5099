package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/readers/export"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/english"
)

// The formats of aa-grade export.
const (
	formatATIF = "atif"
	formatChat = "openai-jsonl"
	chatFile   = "chat.jsonl" // the openai-jsonl export: one episode a line
	// chatIndex says which episode each line of chatFile is. Its name ends in no data format's
	// extension, so that a loader reading every *.jsonl (or *.json) of the folder takes only
	// chatFile: it is no chat file.
	chatIndex   = "chat.jsonl.index"
	exportUsage = "atif (one ATIF document per episode) or openai-jsonl (one line of chat messages per episode)"
)

// exportOptions are the flags of aa-grade export.
type exportOptions struct {
	flagsSet
	format string
	out    string
}

func (o *exportOptions) Validate() error {
	if o.format != formatATIF && o.format != formatChat {
		return usageErrorf("--format %q: must be %s", o.format, exportUsage)
	}
	return nil
}

func newExportCommand() *cli.Command {
	var opts exportOptions
	return &cli.Command{
		Name:      "export",
		Usage:     "write a run's episodes as ATIF trajectories or OpenAI chat messages, for other tools",
		ArgsUsage: "RUN",
		Description: "--format atif writes OUT/<task>/<repeat>/trajectory.json, one ATIF document (" +
			atif.Version + ") per episode:\n" +
			"the prompts, each model reply with its reasoning, tool calls and their results, tokens and cost,\n" +
			"the submission, the grade. --format openai-jsonl writes OUT/" + chatFile + ", one episode a line\n" +
			"({\"messages\": [...], \"tools\": [...]}), and OUT/" + chatIndex + ", the task and repeat of each line\n" +
			"(JSON lines, named so that no loader takes it for chat).\n" +
			"What each format keeps and loses: docs/formats.md. OUT must be new or empty, and not in a folder\n" +
			"of runs, which report and view would take it for: by default it is RUN-FORMAT beside the run\n" +
			"folder's parent (runs/opus: opus-atif beside runs/).\n" +
			"Exit 1 when an episode's trajectory could not be read (the others are exported).\n\n" +
			"Example: aa-grade export runs/opus --format atif --out exports/opus-atif",
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "format", Required: true, Destination: &opts.format, Usage: exportUsage},
			&cli.StringFlag{Name: "out", Destination: &opts.out, DefaultText: "RUN-FORMAT, beside the run folder's parent",
				Usage: "the folder to write"},
		},
		Action: action(&opts, runExport),
	}
}

func runExport(_ context.Context, opts exportOptions, args []string, con console) error {
	if len(args) != 1 {
		return usageErrorf("export needs one RUN folder, got %s; see aa-grade export --help",
			english.Count(len(args), "argument"))
	}
	run, err := runfolder.Read(args[0])
	if err != nil {
		return err
	}
	printSkipped(con.err, run.Warnings)
	out := opts.out
	if out == "" {
		out = defaultExport(args[0], opts.format)
	}
	if err := checkNewFolder("out", out); err != nil {
		return err
	}
	if err := checkNotAmongRuns(out); err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	write := writeATIF
	if opts.format == formatChat {
		write = writeChat
	}
	written, failed, err := write(run, out, con)
	if err != nil {
		return err
	}
	fmt.Fprintf(con.out, "Exported %s of %s to %s (%s)\n", english.Count(written, "episode"), args[0], out,
		opts.format)
	if failed > 0 {
		return badResult(fmt.Errorf("%s could not be exported; see the errors above", english.Count(failed, "episode")))
	}
	return nil
}

// defaultExport is where an export of the run folder run goes unless --out says: beside the
// folder of runs that holds it (runs/opus: opus-atif; opus from inside runs: ../opus-atif),
// never among the runs, where report runs/* and view runs would take it for one. The path is
// told relative to the working folder where it can be.
func defaultExport(run, format string) string {
	abs, err := filepath.Abs(run)
	if err != nil {
		abs = filepath.Clean(run)
	}
	out := filepath.Join(filepath.Dir(filepath.Dir(abs)), filepath.Base(abs)+"-"+format)
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, out); err == nil {
			return rel
		}
	}
	return out
}

// checkNotAmongRuns refuses an export folder whose parent holds run folders: report and view,
// given that folder of runs or its runs/*, would take the export for a run.
func checkNotAmongRuns(out string) error {
	parent := filepath.Dir(filepath.Clean(out))
	entries, err := os.ReadDir(parent)
	if err != nil {
		return nil // a parent that does not exist yet holds no run
	}
	for _, e := range entries {
		run := filepath.Join(parent, e.Name())
		if _, err := runfolder.ReadHeader(run); e.IsDir() && err == nil {
			return usageErrorf("--out %s: %s holds run folders (%s among them), and report and view would take "+
				"the export for one: name a folder elsewhere with --out", out, parent, run)
		}
	}
	return nil
}

// skipOrFail prints why an episode was not exported: an episode without a trajectory is a
// warning, one whose trajectory cannot be read an error (counted).
func skipOrFail(con console, err error) (failed int) {
	if errors.Is(err, export.ErrNoTrajectory) {
		printLine(con.err, "warning: skipped %v", err)
		return 0
	}
	printLine(con.err, "error: %v", err)
	return 1
}

// writeATIF writes each episode's ATIF document as OUT/TASK/REPEAT/trajectory.json.
func writeATIF(run *runfolder.Run, out string, con console) (written, failed int, err error) {
	for _, e := range export.Episodes(run) {
		t, err := export.ATIF(run, e)
		if err != nil {
			failed += skipOrFail(con, err)
			continue
		}
		b, err := json.MarshalIndent(t, "", "  ")
		if err != nil {
			return written, failed, fmt.Errorf("%s repeat %d: %w", e.Task, e.Repeat, err)
		}
		dir := filepath.Join(out, e.Task, strconv.Itoa(e.Repeat))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return written, failed, err
		}
		if err := atomicfile.WriteFile(filepath.Join(dir, atif.File), append(b, '\n')); err != nil {
			return written, failed, err
		}
		written++
	}
	return written, failed, nil
}

// chatIndexLine says which episode a line of chatFile is.
type chatIndexLine struct {
	Line   int      `json:"line"`
	Task   string   `json:"task"`
	Repeat int      `json:"repeat"`
	Status string   `json:"status,omitempty"`
	Score  *float64 `json:"score,omitempty"`
}

// writeChat writes the episodes as OUT/chat.jsonl, one a line, and its index.
func writeChat(run *runfolder.Run, out string, con console) (written, failed int, err error) {
	var index strings.Builder
	path := filepath.Join(out, chatFile)
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = os.Remove(path + ".tmp") }() // gone once renamed; else the leftover of a failure
	w := bufio.NewWriter(f)
	for _, e := range export.Episodes(run) {
		c, err := export.Chat(run, e)
		if err != nil {
			failed += skipOrFail(con, err)
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			_ = f.Close() // abandoned: the temporary file is removed
			return written, failed, fmt.Errorf("%s repeat %d: %w", e.Task, e.Repeat, err)
		}
		_, _ = w.Write(append(b, '\n')) // a bufio.Writer's error comes back from Flush, checked below
		written++
		entry := chatIndexLine{Line: written, Task: e.Task, Repeat: e.Repeat}
		if r, ok := run.Results[e]; ok {
			entry.Status, entry.Score = r.Status, &r.Score
		}
		ib, _ := json.Marshal(entry) // strings and numbers only
		index.Write(append(ib, '\n'))
	}
	if err := errors.Join(w.Flush(), f.Sync(), f.Close()); err != nil {
		return written, failed, fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return written, failed, err
	}
	return written, failed, atomicfile.WriteFile(filepath.Join(out, chatIndex), []byte(index.String()))
}
