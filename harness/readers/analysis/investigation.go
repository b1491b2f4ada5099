package analysis

import (
	"cmp"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/promptset"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// Evidence sources of a snapshot, in the order reports list them.
var Sources = []string{"alerts", "events", "objects", "logs", "traces", "metrics"}

// sourcePatterns tell which source a command reads by the files and folders it names: a
// folder's name counts as a path (alerts/, `ls metrics`), not as a word of prose.
var sourcePatterns = map[string]*regexp.Regexp{
	"alerts":  regexp.MustCompile(`(?:^|[\s'"=(,/])alerts(?:/|[\s'"),*]|$)|alerts_(?:at|in)_`),
	"events":  regexp.MustCompile(`k8s_events`),
	"objects": regexp.MustCompile(`k8s_objects`),
	"logs":    regexp.MustCompile(`otel_logs`),
	"traces":  regexp.MustCompile(`otel_traces`),
	"metrics": regexp.MustCompile(`(?:^|[\s'"=(,/])metrics(?:/|[\s'"),*]|$)|\b(?:pod|service)_[^\s/'"]*_raw\.tsv`),
}

// sourceWords are words one of which each source's pattern needs, to skip without running it
// a pattern a command cannot match (most commands name one source or none).
var sourceWords = map[string][]string{"alerts": {"alerts"}, "events": {"k8s_events"}, "objects": {"k8s_objects"},
	"logs": {"otel_logs"}, "traces": {"otel_traces"}, "metrics": {"metrics", "_raw.tsv"}}

// comment is a shell or Python comment: a # at the start of a line or after a space, to the
// line's end. Quotes are not followed, so a quoted " #" cuts a line short: rare in the
// commands of an investigation, and it only hides a source named after it.
var comment = regexp.MustCompile(`(?m)(?:^|[ \t])#.*$`)

// Command kinds, in the order reports list them: a command is of the first kind one of its
// programs belongs to, so `grep x f | python3 -c ...` is python.
var CommandKinds = []string{"answer", "python", "jq", "grep_awk_sed", "listing", "read", "other"}

var programKinds = map[string]string{
	"python": "python", "python3": "python",
	"jq":   "jq",
	"grep": "grep_awk_sed", "egrep": "grep_awk_sed", "fgrep": "grep_awk_sed", "rg": "grep_awk_sed", "awk": "grep_awk_sed",
	"gawk": "grep_awk_sed", "sed": "grep_awk_sed", "cut": "grep_awk_sed", "sort": "grep_awk_sed", "uniq": "grep_awk_sed",
	"tr": "grep_awk_sed", "column": "grep_awk_sed", "paste": "grep_awk_sed", "join": "grep_awk_sed",
	"cat": "read", "head": "read", "tail": "read", "less": "read", "more": "read", "wc": "read", "zcat": "read",
	"nl": "read",
	"ls": "listing", "find": "listing", "tree": "listing", "du": "listing", "stat": "listing", "file": "listing",
}

// commandSeparators split a command line into the simple commands whose programs count.
var commandSeparators = regexp.MustCompile(`\|\|?|&&|;|\n|\$\(|` + "`" + `|\(|\{`)

// commandKind is the kind of a shell command: answer when it touches the submission file,
// else the first kind (CommandKinds order) among its programs' kinds.
func commandKind(cmd string) string {
	if strings.Contains(cmd, grader.SubmissionFile) {
		return "answer"
	}
	best := len(CommandKinds) - 1
	for _, part := range commandSeparators.Split(cmd, -1) {
		kind, ok := programKinds[program(part)]
		if !ok {
			continue
		}
		for i, k := range CommandKinds {
			if k == kind && i < best {
				best = i
			}
		}
	}
	return CommandKinds[best]
}

// program is the program a simple command runs: its first word after variable assignments
// and the wrappers that run another program (sudo, time, timeout N, xargs, env).
func program(simple string) string {
	words := strings.Fields(simple)
	for i := 0; i < len(words); i++ {
		w := words[i]
		switch {
		case strings.Contains(w, "=") && !strings.HasPrefix(w, "="):
		case w == "sudo" || w == "time" || w == "xargs" || w == "env" || w == "nice" || w == "!":
		case w == "timeout":
			i++ // its duration
		case strings.HasPrefix(w, "-"): // an option of a wrapper
		default:
			return path.Base(strings.TrimRight(w, ")}"))
		}
	}
	return ""
}

// sourcesOf lists the sources a command names, in the order it names them.
func sourcesOf(cmd string) []string {
	type at struct {
		source string
		pos    int
	}
	var found []at
	if strings.Contains(cmd, "#") {
		cmd = comment.ReplaceAllString(cmd, "")
	}
	for _, s := range Sources {
		if !slices.ContainsFunc(sourceWords[s], func(w string) bool { return strings.Contains(cmd, w) }) {
			continue
		}
		if loc := sourcePatterns[s].FindStringIndex(cmd); loc != nil {
			found = append(found, at{s, loc[0]})
		}
	}
	slices.SortStableFunc(found, func(a, b at) int { return cmp.Compare(a.pos, b.pos) })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.source
	}
	return out
}

// Investigation is how an episode went, from its trajectory.
type Investigation struct {
	Turns int
	// FirstHitTurn is the first turn whose reply (its text or a tool call) named an object of
	// a root cause, and FirstHitTokens the tokens (input and output) its calls used up to and
	// including that turn; nil when no turn did.
	FirstHitTurn   *int
	FirstHitTokens *int64
	SourcesRead    []string       // in the order first read
	Commands       map[string]int // shell commands by kind
	Failed         int            // shell commands that exited non-zero, timed out or were refused
	Truncated      int            // shell outputs cut to the output limit
	Repeated       int            // shell commands identical to an earlier one of the episode
	// Named are the call topology's services the replies and commands named, in order.
	Named []string
}

// Investigate reads an episode's turn records, taking its shell results apart in the words of
// prompts, the set the run used (nil for the built-in one). A summarisation call is no turn:
// its tokens count, its reply does not name anything.
func Investigate(turns []runfolder.TurnRecord, key *Key, prompts *promptset.Set) Investigation {
	inv := Investigation{Commands: map[string]int{}}
	var tokens int64
	shellCalls := map[string]bool{} // ids of the shell calls whose results are still to come
	seen := map[string]bool{}
	read := map[string]bool{}
	for _, t := range turns {
		tokens += t.Usage.Input + t.Usage.Output
		for _, m := range t.Input {
			if m.ToolCallID == "" || !shellCalls[m.ToolCallID] {
				continue
			}
			delete(shellCalls, m.ToolCallID)
			out, ok := prompts.ReadShellResult(m.Content)
			if m.IsError || !ok || out.TimedOut || out.Error != "" || out.ExitCode != 0 {
				inv.Failed++ // a refusal (bad arguments) is no shell result
			}
			if out.Stdout.Notice != "" || out.Stderr.Notice != "" {
				inv.Truncated++
			}
		}
		if t.Summary {
			continue
		}
		inv.Turns = max(inv.Turns, t.Turn)
		said := []string{t.Reply.Content}
		for _, c := range t.Reply.ToolCalls {
			cmd, ok := model.ShellCommand(c.Arguments)
			if !ok {
				said = append(said, c.Arguments)
				continue
			}
			said = append(said, cmd)
			shellCalls[c.ID] = true
			inv.Commands[commandKind(cmd)]++
			norm := strings.Join(strings.Fields(cmd), " ")
			if seen[norm] {
				inv.Repeated++
			}
			seen[norm] = true
			for _, s := range sourcesOf(cmd) {
				if !read[s] {
					read[s] = true
					inv.SourcesRead = append(inv.SourcesRead, s)
				}
			}
		}
		if key != nil {
			for _, svc := range key.ServicesNamed(strings.Join(said, "\n")) {
				if !slices.Contains(inv.Named, svc) {
					inv.Named = append(inv.Named, svc)
				}
			}
		}
		if inv.FirstHitTurn == nil && key != nil && key.Mentions(strings.Join(said, "\n")) {
			turn, spent := t.Turn, tokens
			inv.FirstHitTurn, inv.FirstHitTokens = &turn, &spent
		}
	}
	return inv
}
