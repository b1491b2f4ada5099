// Command aa-grade reproduces the ITBench-AA SRE benchmark offline and grades agents on it.
//
// Exit codes: 0 success; 1 the command ran but the result is bad (a task that cannot be
// graded, an incomplete run, a corrupt cache); 2 usage error; 3 infrastructure failure;
// 130 interrupted. Errors are one line on stderr.
//
// Text that may come from the model, the sandbox, a dataset or a provider (commands, errors,
// task ids, file names) goes through termtext.Sanitize before it reaches a terminal; --json
// output keeps it whole, its control characters escaped (printJSON).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v3"

	"github.com/aa-grade/aa-grade/harness/runner"

	"github.com/aa-grade/aa-grade/internal/termtext"
)

func main() {
	os.Exit(run(os.Args, os.Stdout, os.Stderr))
}

// run executes the command line and returns the exit code; main stays a one-liner so tests
// can drive the real command table.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := newApp(stdout, stderr).Run(ctx, args)
	return exitCode(err, stderr)
}

func newApp(stdout, stderr io.Writer) *cli.Command {
	app := &cli.Command{
		Name:  "aa-grade",
		Usage: "reproduce the ITBench-AA SRE benchmark offline and grade agents on it",
		Description: "Every flag can also be set with an AA_GRADE_<FLAG> environment variable " +
			"(for example AA_GRADE_DATASET).\n\n" +
			"Exit codes: 0 success, 1 bad result, 2 usage error, 3 infrastructure failure.",
		Version:   runner.Version,
		Writer:    stdout,
		ErrWriter: stderr,
		Commands: []*cli.Command{
			newRunCommand(),
			newGradeCommand(),
			newMergeCommand(),
			newModelsCommand(),
			newPromptsCommand(),
			newReportCommand(),
			newAnalyzeCommand(),
			newViewCommand(),
			newDataCommand(),
			newTasksCommand(),
			newDoctorCommand(),
			newAgentCommand(),
			newCgroupExecCommand(),
		},
		// Errors are printed once, by exitCode; the library must not exit on its own.
		ExitErrHandler: func(context.Context, *cli.Command, error) {},
	}
	markUsageErrors(app)
	return app
}

// markUsageErrors makes flag parsing errors of every command usage errors (exit 2), and makes
// a command group given an unknown sub-command say so (exit 2) instead of printing its help.
func markUsageErrors(cmd *cli.Command) {
	cmd.OnUsageError = func(_ context.Context, _ *cli.Command, err error, _ bool) error {
		return usageErrorf("%v", err)
	}
	if len(cmd.Commands) > 0 && cmd.Action == nil {
		cmd.Action = func(_ context.Context, c *cli.Command) error {
			if c.NArg() > 0 {
				return usageErrorf("no command %q; see %s --help", c.Args().First(), c.FullName())
			}
			return cli.ShowSubcommandHelp(c)
		}
	}
	for _, sub := range cmd.Commands {
		markUsageErrors(sub)
	}
}

// env is the environment variable source of a flag: AA_GRADE_ and the flag name in upper
// case with dashes as underscores.
func env(flag string) cli.ValueSourceChain {
	return cli.EnvVars("AA_GRADE_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_")))
}

// exitError carries the exit code chosen for an error.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

func usageErrorf(format string, args ...any) error {
	return &exitError{code: 2, err: fmt.Errorf(format, args...)}
}

// badResult reports a command that ran to the end with a bad result (exit 1).
func badResult(err error) error { return &exitError{code: 1, err: err} }

// exitCode prints err (if any) as one line and maps it to the process exit code.
// Unclassified errors are infrastructure failures. Errors quote model replies, file contents
// and task ids, so the line is sanitized.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	code := 3
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
	}
	if msg := strings.TrimSpace(err.Error()); msg != "" {
		printLine(stderr, "aa-grade: %s", msg)
	}
	return code
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
