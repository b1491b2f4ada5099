// Command aa-grade reproduces the ITBench-AA SRE benchmark offline and grades agents on it.
//
// Each command is a file: its options (the flags, bound to a struct with a Validate method),
// its constructor and its runX(ctx, opts, args, console). Exit codes are chosen in one place,
// the table in exitcodes.go. Errors are one line on stderr.
//
// Text that may come from the model, the sandbox, a dataset or a provider (commands, errors,
// task ids, file names) goes through termtext.Sanitize before it reaches a terminal; --json
// output keeps it whole, its control characters escaped (printJSON).
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox"
	"github.com/aa-grade/aa-grade/internal/atomicfile"
	"github.com/aa-grade/aa-grade/internal/termtext"
	"github.com/aa-grade/aa-grade/internal/version"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code; main stays a one-liner so tests
// can drive the real command table.
func run(args []string, stdout, stderr io.Writer) int {
	if data.DemoConcealed() && !guestMode(args) {
		fmt.Fprintln(stderr,
			"aa-grade: this copy of aa-grade is a sandbox's guest, without the demo dataset: it runs nothing else")
		return exitUsage
	}
	// The copy of aa-grade a sandbox runs holds no answer (docs/sandbox.md).
	sandbox.Conceal(data.DemoArchive())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newApp(stdout, stderr).Run(ctx, args)
	return exitCode(repairHint(badVariableValue(err)), stderr)
}

// guestMode says whether args start the hidden in-sandbox guest, all that a sandbox's copy of
// aa-grade runs: the demo's archive is zeroed in it, and the rest is refused, since `tasks
// synth` given a demo task's fault and seed would write that task, ground truth included.
func guestMode(args []string) bool { return len(args) == 2 && args[1] == sandbox.GuestCommand }

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:  "aa-grade",
		Usage: "reproduce the ITBench-AA SRE benchmark offline and grade agents on it",
		Description: "A flag shown with [$AA_GRADE_...] in a command's help can also be set by that environment variable;\n" +
			"each variable means one thing in every command that reads it (the table: docs/cli.md).\n\n" +
			"Exit codes: 0 success, 1 bad result, 2 usage error, 3 infrastructure failure, 130 interrupted.",
		Version:   version.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			newRunCommand(),
			newGradeCommand(),
			newMergeCommand(),
			newRepairCommand(),
			newModelsCommand(),
			newPromptsCommand(),
			newReportCommand(),
			newAnalyzeCommand(),
			newExportCommand(),
			newViewCommand(),
			newDataCommand(),
			newTasksCommand(),
			newDoctorCommand(),
			newGuestCommand(),
			newCgroupExecCommand(),
		},
		// Errors are printed once, by exitCode; the library must not exit on its own.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
		// aa-grade completion bash|zsh|fish|pwsh prints the script that completes commands and
		// flags, asking aa-grade itself for them; listed in the help, as a command of its own.
		EnableShellCompletion: true,
		ConfigureShellCompletionCommand: func(c *cli.Command) {
			c.Hidden = false
			c.Usage = "print the shell completion script: bash, zsh, fish or pwsh"
			c.Action = nil // alone it prints its help, and an unknown shell is a usage error, as for data and tasks
			markUsageErrors(c)
		},
	}
	markUsageErrors(app)
	return app
}

// markUsageErrors makes flag parsing errors of every command usage errors (exit 2), with a
// suggestion for a mistyped flag; a command group given no sub-command prints the help that
// --help prints (exit 0), and an unknown one is a usage error with a suggestion.
func markUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, c *cli.Command, err error, _ bool) error {
		if missing := missingFlags(err); missing != "" {
			return usageErrorf("%s; see %s --help", missing, c.FullName())
		}
		if msg := unknownFlag(c, err); msg != "" {
			return usageErrorf("%s", msg)
		}
		if msg := badFlagValue(c, err); msg != "" {
			return usageErrorf("%s", msg)
		}
		return usageError(err)
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = func(_ context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				name := c.Args().First()
				return usageErrorf("no command %q%s; see %s --help", name, didYouMean(name, commandNames(c)), c.FullName())
			}
			if c.Root() == c {
				return cli.ShowRootCommandHelp(c)
			}
			return cli.ShowSubcommandHelp(c)
		}
	}
	for _, sub := range cmd.Commands {
		markUsageErrors(sub)
	}
}

// console is where a command writes: results to out; progress, warnings and notes to err.
type console struct {
	out, err io.Writer
}

// flagsSet tells an options struct which of its flags were given, on the command line or in
// the environment, for the settings whose default depends on something else (a replayed
// run's, a preset's).
type flagsSet struct {
	isSet func(name string) bool
}

func (f *flagsSet) bind(cmd *cli.Command) { f.isSet = cmd.IsSet }

// options is a command's options struct: its flags' values and their checks.
type options[O any] interface {
	*O
	Validate() error
	bind(*cli.Command)
}

// action runs a command: its options are checked before run sees them, and run gets the
// arguments and the console.
func action[O any, P options[O]](opts P, run func(context.Context, O, []string, console) error) cli.ActionFunc {
	return func(ctx context.Context, cmd *cli.Command) error {
		opts.bind(cmd)
		if err := opts.Validate(); err != nil {
			return err
		}
		out := &outputWriter{w: cmd.Root().Writer}
		err := run(ctx, *opts, cmd.Args().Slice(), console{out, cmd.Root().ErrWriter})
		if err == nil && out.err != nil {
			return fmt.Errorf("write the output: %w", out.err)
		}
		return err
	}
}

// outputWriter is a command's stdout. It remembers the first error of a write and refuses the
// writes after it, so that a command whose results could not be written (a full disk, a closed
// pipe) ends with that error instead of silently, while its code writes with fmt.Fprint*
// unchecked, as errcheck is told (.golangci.yml). Its stderr is left as it is: a warning that
// cannot be written has nowhere else to go.
type outputWriter struct {
	w   io.Writer
	err error
}

func (o *outputWriter) Write(p []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.w.Write(p)
	o.err = err
	return n, err
}

// noArgs refuses arguments to a command that takes none.
func noArgs(command string, args []string) error {
	if len(args) > 0 {
		return usageErrorf("aa-grade %s takes no arguments, got %q", command, args)
	}
	return nil
}

// printLine writes a line of text that may quote the model, the sandbox, a dataset or a
// provider: sanitized, so no escape sequence in it reaches the terminal and it stays one line.
func printLine(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, termtext.Sanitize(fmt.Sprintf(format, args...)))
}

// printJSON writes v as indented JSON: the --json output of every command. Its strings keep
// untrusted text whole, with every control character escaped (termtext.EscapeJSON).
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode JSON: %w", err)
	}
	if _, err := w.Write(append(termtext.EscapeJSON(b), '\n')); err != nil {
		return fmt.Errorf("write JSON: %w", err)
	}
	return nil
}

// writeHTML writes the page that write renders to path (--html), whole or not at all.
func writeHTML(path string, write func(io.Writer) error) error {
	var page bytes.Buffer
	if err := write(&page); err != nil {
		return err
	}
	if err := atomicfile.WriteFile(path, page.Bytes()); err != nil {
		return fmt.Errorf("--html: write %s: %w", path, err)
	}
	return nil
}
