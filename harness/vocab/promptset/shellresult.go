package promptset

import (
	"strconv"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// ShellOutput is a shell tool result taken apart again, for people reading a trajectory: a
// trajectory keeps each result as the one text the model read.
type ShellOutput struct {
	ExitCode int
	TimedOut bool   // killed at the command timeout: no exit code
	Error    string // the sandbox could not run the command: no exit code, no output
	Stdout   Stream
	Stderr   Stream
}

// Stream is one output stream as the model saw it. A stream longer than the sandbox keeps
// lost its middle: Notice is the truncation notice the model read between its Head and its
// Tail. A whole stream is all Head.
type Stream struct {
	Head, Notice, Tail string
}

// ReadShellResult reads a tool result back as the set's shell_result, shell_timeout or
// shell_error key worded it; ok is false for any other text (a refusal, the finish tool's
// answer, a result a set with other wording wrote).
func (p *Set) ReadShellResult(text string) (ShellOutput, bool) {
	p = p.orBuiltin()
	known := map[string]string{"output_limit": strconv.Itoa(shellspec.OutputLimit),
		"output_half": strconv.Itoa(shellspec.OutputLimit / 2)}
	if v, ok := p.parsed[keyShellResult].match(text, known); ok {
		code, err := strconv.Atoi(v["exit_code"])
		if err == nil {
			return ShellOutput{ExitCode: code, Stdout: p.stream(v["stdout"]), Stderr: p.stream(v["stderr"])}, true
		}
	}
	if v, ok := p.parsed[keyShellTimeout].match(text, known); ok {
		return ShellOutput{TimedOut: true, Stdout: p.stream(v["stdout"]), Stderr: p.stream(v["stderr"])}, true
	}
	if v, ok := p.parsed[keyShellError].match(text, known); ok {
		return ShellOutput{Error: v["error"]}, true
	}
	return ShellOutput{}, false
}

// stream finds the truncation notice where retell puts it: right after the first
// OutputLimit/2 characters.
func (p *Set) stream(s string) Stream {
	at := runeOffset(s, shellspec.OutputLimit/2)
	if at < 0 {
		return Stream{Head: s}
	}
	var notice strings.Builder
	p.parsed[keyTruncationNotice].render(&notice, map[string]string{"total": "\x00",
		"output_limit": strconv.Itoa(shellspec.OutputLimit), "output_half": strconv.Itoa(shellspec.OutputLimit / 2)})
	before, after, _ := strings.Cut(notice.String(), "\x00")
	rest, ok := strings.CutPrefix(s[at:], before)
	if !ok {
		return Stream{Head: s}
	}
	if strings.Contains(notice.String(), "\x00") {
		digits := len(rest) - len(strings.TrimLeft(rest, "0123456789"))
		if digits == 0 {
			return Stream{Head: s}
		}
		rest = rest[digits:]
	}
	if rest, ok = strings.CutPrefix(rest, after); !ok {
		return Stream{Head: s}
	}
	return Stream{Head: s[:at], Notice: s[at : len(s)-len(rest)], Tail: rest}
}

// CommandResult is a command's result as the sandbox hands it back: each stream cut to
// shellspec.OutputLimit characters, the notice in its middle, and how long it was.
type CommandResult struct {
	ExitCode                 int
	TimedOut                 bool
	Stdout, Stderr           string
	StdoutChars, StderrChars int64
}

// ShellResult is a command's result as the set words it, its streams' truncation notices
// in the set's words too: what ReadShellResult takes apart again.
func (t Texts) ShellResult(r CommandResult) string {
	stdout, stderr := t.retell(r.Stdout, r.StdoutChars), t.retell(r.Stderr, r.StderrChars)
	if r.TimedOut {
		return t.text(keyShellTimeout, map[string]string{"stdout": stdout, "stderr": stderr})
	}
	return t.text(keyShellResult,
		map[string]string{"exit_code": strconv.Itoa(r.ExitCode), "stdout": stdout, "stderr": stderr})
}

// retell puts the set's truncation notice in place of the sandbox's in a stream of total
// characters. The sandbox keeps the first OutputLimit/2 characters, its notice, then the last
// ones; the notice is replaced at exactly that place, so output that merely quotes it stays
// as it is.
func (t Texts) retell(s string, total int64) string {
	if total <= shellspec.OutputLimit {
		return s
	}
	at := runeOffset(s, shellspec.OutputLimit/2)
	notice := shellspec.TruncationNotice(total, shellspec.OutputLimit)
	if at < 0 || !strings.HasPrefix(s[at:], notice) {
		return s
	}
	return s[:at] + t.text(keyTruncationNotice,
		map[string]string{"total": strconv.FormatInt(total, 10)}) + s[at+len(notice):]
}

// runeOffset is the byte offset of s's n-th character, -1 when s is shorter.
func runeOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	if n == 0 {
		return len(s)
	}
	return -1
}
