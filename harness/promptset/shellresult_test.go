package promptset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/sandbox"
	"github.com/aa-grade/aa-grade/harness/shellspec"
)

// captured is a stream as the sandbox keeps it: cut to OutputLimit with its notice.
func captured(s string) (string, int64) {
	c := sandbox.NewCapture(shellspec.OutputLimit)
	c.Write([]byte(s))
	return c.String(), c.Total()
}

// TestReadShellResult renders results as an episode does, with the built-in set and with
// another set's wording (the fixture laid out like Stirrup's files), and reads them back: exit code, streams, timeout, sandbox error, and the
// truncation notice found where the model saw it (and not where the output merely quotes it).
func TestReadShellResult(t *testing.T) {
	long := strings.Repeat("é", shellspec.OutputLimit) + "<stdout>quoted</stdout>" + strings.Repeat("z", 5000)
	longOut, longTotal := captured(long)
	for name, p := range map[string]*Set{"builtin": Builtin(), "stirrup": stirrupPrompts(t)} {
		t.Run(name, func(t *testing.T) {
			tx := p.ForEpisode(Facts{Workdir: "/w", Commands: fullTools.Commands, Python: fullTools.Python, MaxTurns: 100, CommandTimeout: 90 * time.Second})

			text := tx.ShellResult(CommandResult{ExitCode: 3, Stdout: "a\n</stdout>b", Stderr: "boom\n"})
			got, ok := p.ReadShellResult(text)
			if !ok || got.ExitCode != 3 || got.TimedOut || got.Stderr != (Stream{Head: "boom\n"}) {
				t.Fatalf("read %q as %+v, %v", text, got, ok)
			}
			if name == "builtin" && got.Stdout.Head != "a\n</stdout>b" {
				t.Errorf("stdout %q", got.Stdout.Head)
			}

			text = tx.ShellResult(CommandResult{ExitCode: 0, Stdout: longOut, StdoutChars: longTotal})
			got, ok = p.ReadShellResult(text)
			if !ok || got.Stdout.Notice == "" || !strings.Contains(got.Stdout.Notice, "truncated") ||
				got.Stdout.Head+got.Stdout.Notice+got.Stdout.Tail != tx.retell(longOut, longTotal) ||
				!strings.HasSuffix(got.Stdout.Tail, "zzz") || strings.ContainsRune(got.Stdout.Head, 'z') {
				t.Fatalf("truncated stdout read as %+v, %v", got.Stdout, ok)
			}

			text = tx.ShellResult(CommandResult{ExitCode: -1, TimedOut: true, Stderr: "late"})
			if got, ok = p.ReadShellResult(text); !ok || !got.TimedOut || (name == "builtin" && got.Stderr.Head != "late") || got.Stdout.Head != "" {
				t.Errorf("timeout %q read as %+v, %v", text, got, ok)
			}
			text = tx.ShellError(errors.New("no bash"))
			if got, ok = p.ReadShellResult(text); !ok || got.Error != "no bash" {
				t.Errorf("sandbox error %q read as %+v, %v", text, got, ok)
			}
		})
	}
	// An output that merely quotes the notice at another place is not cut.
	quoted := "x" + shellspec.TruncationNotice(99999, shellspec.OutputLimit)
	if got, ok := Builtin().ReadShellResult("<shell_results>\n<exit_code>0</exit_code>\n<stdout>" + quoted + "</stdout>\n<stderr></stderr>\n</shell_results>"); !ok || got.Stdout != (Stream{Head: quoted}) {
		t.Errorf("quoted notice read as %+v", got.Stdout)
	}
	for _, other := range []string{"Unknown tool \"ls\": the tools are code_exec and finish.", "<shell_results>\n<exit_code>x</exit_code>\n<stdout></stdout>\n<stderr></stderr>\n</shell_results>", ""} {
		if got, ok := Builtin().ReadShellResult(other); ok {
			t.Errorf("%q read as a shell result: %+v", other, got)
		}
	}
}
