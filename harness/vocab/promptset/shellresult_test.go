package promptset

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// captured is a stream as the sandbox keeps it: cut to OutputLimit with its notice.
func captured(s string) (string, int64) {
	c := wire.NewCapture(shellspec.OutputLimit)
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
			if !ok {
				t.Fatalf("%q not read", text)
			}
			if got.ExitCode != 3 {
				t.Errorf("exit code %d, want 3", got.ExitCode)
			}
			if got.TimedOut {
				t.Errorf("read as timed out")
			}
			if want := (Stream{Head: "boom\n"}); got.Stderr != want {
				t.Errorf("stderr %+v, want %+v", got.Stderr, want)
			}
			if t.Failed() {
				t.Fatalf("read %q as %+v", text, got)
			}
			if name == "builtin" && got.Stdout.Head != "a\n</stdout>b" {
				t.Errorf("stdout %q", got.Stdout.Head)
			}

			text = tx.ShellResult(CommandResult{ExitCode: 0, Stdout: longOut, StdoutChars: longTotal})
			got, ok = p.ReadShellResult(text)
			if !ok {
				t.Fatalf("truncated stdout not read")
			}
			out := got.Stdout
			textcheck.Has(t, "the truncation notice", out.Notice, "truncated")
			if out.Head+out.Notice+out.Tail != tx.retell(longOut, longTotal) {
				t.Errorf("head, notice and tail are not the stdout the model saw")
			}
			if !strings.HasSuffix(out.Tail, "zzz") {
				t.Errorf("the tail ends %q, want the output's end", out.Tail[max(0, len(out.Tail)-20):])
			}
			if strings.ContainsRune(out.Head, 'z') {
				t.Errorf("the head holds the output's end (z)")
			}
			if t.Failed() {
				t.FailNow()
			}

			text = tx.ShellResult(CommandResult{ExitCode: -1, TimedOut: true, Stderr: "late"})
			if got, ok = p.ReadShellResult(text); !ok || !got.TimedOut {
				t.Errorf("timeout %q read as %+v, %v", text, got, ok)
			}
			if name == "builtin" && got.Stderr.Head != "late" {
				t.Errorf("timeout: stderr %q, want %q", got.Stderr.Head, "late")
			}
			if got.Stdout.Head != "" {
				t.Errorf("timeout: stdout %q, want none", got.Stdout.Head)
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
