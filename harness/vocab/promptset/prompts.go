// Package promptset is the prompt set, every text the model sees in an episode, and the
// template language its texts are written in. The loop renders a set; the readers of
// trajectories read shell results back by it, without importing the loop.
package promptset

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// A prompt set is every text the model sees in an episode: the system and task prompts, the
// tools' names and descriptions, the harness's own messages and the tool results' wording.
// The built-in set is builtin-prompts.txt; a user replaces it as a whole from a file of the
// same format (docs/prompts.md), so that wording is an input of a run, hashed into its
// header, rather than something only a rebuild can change.

// The keys of a prompt set, in the order a prompt file lists them.
const (
	keySystem                 = "system"
	keyTask                   = "task"
	keyAgentTask              = "agent_task"
	keyShellTool              = "shell_tool"
	keyShellDescription       = "shell_description"
	keyShellCmdDescription    = "shell_cmd_description"
	keyShellParamsDesc        = "shell_params_description"
	keyFinishTool             = "finish_tool"
	keyFinishDescription      = "finish_description"
	keyFinishReasonDesc       = "finish_reason_description"
	keyFinishPathsDesc        = "finish_paths_description"
	keyFinishParamsDesc       = "finish_params_description"
	keyTurnsLeft              = "turns_left"
	keyLastTurn               = "last_turn"
	keyContinue               = "continue"
	keySummaryRequest         = "summary_request"
	keySummaryBridge          = "summary_bridge"
	keySummaryAck             = "summary_ack"
	keyShellResult            = "shell_result"
	keyShellTimeout           = "shell_timeout"
	keyShellError             = "shell_error"
	keyTruncationNotice       = "truncation_notice"
	keyShellInvalidArguments  = "shell_invalid_arguments"
	keyUnknownTool            = "unknown_tool"
	keyFinishInvalidArguments = "finish_invalid_arguments"
	keyFinishTwoCalls         = "finish_two_calls"
	keyFinishNoOutput         = "finish_no_output"
	keyFinishOutputOutside    = "finish_output_outside"
	keyFinishInvalidOutput    = "finish_invalid_output"
	keyFinishUnreadableOutput = "finish_unreadable_output"
	keyFinishPathMissing      = "finish_path_missing"
	keyFinishPathOutside      = "finish_path_outside"
	keyFinishPathRefused      = "finish_path_refused"
)

// promptKey is one text of a set: its key and the placeholders it has beyond the episode's
// (episodeVariables); a tool name is literal and has none. An optional key may be left out of
// a file (its text is then empty) and is written only when it has a text, so the sets written
// before it existed keep their hash.
type promptKey struct {
	name     string
	vars     []string
	toolName bool
	optional bool
}

// promptKeys are the keys every set has, in file order.
var promptKeys = []promptKey{
	{name: keySystem}, {name: keyTask}, {name: keyAgentTask, optional: true},
	{
		name:     keyShellTool,
		toolName: true,
	}, {name: keyShellDescription}, {name: keyShellCmdDescription}, {name: keyShellParamsDesc, optional: true},
	{name: keyFinishTool,
		toolName: true}, {name: keyFinishDescription}, {name: keyFinishReasonDesc}, {name: keyFinishPathsDesc},
	{name: keyFinishParamsDesc, optional: true},
	{name: keyTurnsLeft, vars: []string{"turns_left"}}, {name: keyLastTurn}, {name: keyContinue},
	{name: keySummaryRequest}, {name: keySummaryBridge, vars: []string{"summary"}}, {name: keySummaryAck},
	{name: keyShellResult, vars: []string{"exit_code", "stdout", "stderr"}},
	{name: keyShellTimeout, vars: []string{"stdout", "stderr"}},
	{name: keyShellError, vars: []string{"error"}},
	{name: keyTruncationNotice, vars: []string{"total"}},
	{name: keyShellInvalidArguments, vars: []string{"arguments"}},
	{name: keyUnknownTool, vars: []string{"tool"}},
	{
		name: keyFinishInvalidArguments,
	}, {name: keyFinishTwoCalls}, {name: keyFinishNoOutput}, {name: keyFinishOutputOutside},
	{name: keyFinishInvalidOutput, vars: []string{"error"}}, {name: keyFinishUnreadableOutput, vars: []string{"error"}},
	{name: keyFinishPathMissing, vars: []string{"path"}}, {name: keyFinishPathOutside, vars: []string{"path"}},
	{name: keyFinishPathRefused, vars: []string{"path", "error"}},
}

// episodeVariables are the placeholders every key but a tool name may use: facts of the
// episode, the same from its first message to its last.
var episodeVariables = append([]string{"workdir", "output_file", "output_path", "max_turns", "command_timeout",
	"output_limit", "output_half", "shell_tool", "finish_tool", "tools", "python_commands", "python_packages",
	"missing_packages"}, packageVariables()...)

// packageVariables are package_NAME for each Python package the sandbox probe looks for.
func packageVariables() []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(shellspec.ReferencePackages)) {
		out = append(out, "package_"+name)
	}
	return out
}

// Set is a prompt set, parsed and checked. A nil *Set is the built-in set.
type Set struct {
	texts  map[string]string
	parsed map[string]template
}

//go:embed builtin-prompts.txt
var builtinText []byte

var builtin = mustParse(builtinText)

// builtinAgentTaskText is the task an agent run (--agent) hands a CLI or program that has no
// finish tool: the task's words but for the finish tool. It stands apart from the built-in
// set, so that the loop's set, and the hash run.json keeps of it, stay as they were; a set of
// the user's own may hold an agent_task of its own.
//
//go:embed builtin-agent-task.txt
var builtinAgentTaskText string

// mustParse parses the built-in set, which tests keep valid.
func mustParse(doc []byte) *Set {
	p, err := Parse(doc)
	if err != nil {
		panic("the built-in prompt set: " + err.Error())
	}
	return p
}

// Builtin is the set a run uses unless told otherwise.
func Builtin() *Set { return builtin }

// orBuiltin makes a nil set the built-in one.
func (p *Set) orBuiltin() *Set {
	if p == nil {
		return builtin
	}
	return p
}

// sectionHeader is the line that starts a key's text in a prompt file.
var sectionHeader = regexp.MustCompile(`^--- ([A-Za-z0-9_.-]+) ---$`)

// toolName is what the providers accept as a tool name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// Parse reads a prompt file: optional comment lines (`#`) and blank lines, then one
// section per key, each a `--- key ---` line followed by the key's text up to the next
// section (the line break before it is not part of the text). Every key must be there once;
// an unknown key, a placeholder the key does not have, or a malformed section is an error
// naming the line.
func Parse(doc []byte) (*Set, error) {
	texts, lines, err := splitSections(string(doc))
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, k := range promptKeys {
		if _, ok := texts[k.name]; !ok && !k.optional {
			missing = append(missing, k.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing keys: %s", strings.Join(missing, ", "))
	}
	p := &Set{texts: texts, parsed: map[string]template{}}
	for _, k := range promptKeys {
		if err := p.set(k, texts[k.name]); err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", textLine(err, lines[k.name], texts[k.name]), k.name, err)
		}
	}
	if err := p.checkToolNames(); err != nil {
		return nil, fmt.Errorf("line %d: %w", lines[keyFinishTool], err)
	}
	return p, nil
}

// checkToolNames refuses two tools of one name: a call could not tell which is meant.
func (p *Set) checkToolNames() error {
	if p.texts[keyShellTool] == p.texts[keyFinishTool] {
		return fmt.Errorf("%s and %s are both %q", keyShellTool, keyFinishTool, p.texts[keyShellTool])
	}
	return nil
}

// splitSections cuts a prompt file into its keys' texts, with the line of each key's header.
func splitSections(doc string) (map[string]string, map[string]int, error) {
	texts, lines := map[string]string{}, map[string]int{}
	rows := strings.Split(doc, "\n")
	if len(rows) > 0 && rows[len(rows)-1] == "" {
		rows = rows[:len(rows)-1] // the file's final line break ends the last text
	}
	key, body := "", []string(nil)
	flush := func() {
		if key != "" {
			texts[key] = strings.Join(body, "\n")
		}
	}
	for i, row := range rows {
		m := sectionHeader.FindStringSubmatch(row)
		switch {
		case m != nil:
			flush()
			key, body = m[1], nil
			if _, ok := keyNamed(key); !ok {
				return nil, nil, fmt.Errorf("line %d: unknown key %q", i+1, key)
			}
			if _, dup := lines[key]; dup {
				return nil, nil, fmt.Errorf("line %d: key %q again (first on line %d)", i+1, key, lines[key])
			}
			lines[key] = i + 1
		case key != "":
			body = append(body, row)
		case row != "" && !strings.HasPrefix(row, "#"):
			return nil, nil, fmt.Errorf("line %d: text before the first `--- key ---` line (only # comments may come first)",
				i+1)
		}
	}
	flush()
	return texts, lines, nil
}

// keyNamed finds a key of the sets.
func keyNamed(name string) (promptKey, bool) {
	i := slices.IndexFunc(promptKeys, func(k promptKey) bool { return k.name == name })
	if i < 0 {
		return promptKey{}, false
	}
	return promptKeys[i], true
}

// textLine is the file line of a problem in a key's text whose section starts on line header
// (0: the text is a file of its own).
func textLine(err error, header int, text string) int {
	var te *templateError
	if errors.As(err, &te) {
		return header + 1 + strings.Count(text[:te.offset], "\n")
	}
	return header
}

// set checks and stores one key's text.
func (p *Set) set(k promptKey, text string) error {
	if k.toolName {
		if !toolName.MatchString(text) {
			return fmt.Errorf("a tool name is 1 to 64 letters, digits, _ or -, not %q", text)
		}
		p.texts[k.name], p.parsed[k.name] = text, template{{text: text}}
		return nil
	}
	allowed := map[string]bool{}
	for _, v := range append(slices.Clone(episodeVariables), k.vars...) {
		allowed[v] = true
	}
	t, err := parseTemplate(text, allowed)
	if err != nil {
		return err
	}
	p.texts[k.name], p.parsed[k.name] = text, t
	return nil
}

// ErrTaskPrompt marks a task prompt that could not make an episode: empty (the model would be
// sent nothing to do), or never saying where the answer goes.
var ErrTaskPrompt = errors.New("not a task prompt")

// WithTask returns the set with another task prompt (--prompt-file), which must say where the
// answer goes ({{output_path}}): without it no episode could be graded.
func (p *Set) WithTask(text string) (*Set, error) {
	switch {
	case strings.TrimSpace(text) == "":
		return nil, fmt.Errorf("%w: it is empty", ErrTaskPrompt)
	case !strings.Contains(text, "{{output_path}}"):
		return nil, fmt.Errorf("%w: it never says where the answer goes ({{output_path}})", ErrTaskPrompt)
	}
	return p.with(keyTask, text)
}

// with returns the set with one key's text replaced.
func (p *Set) with(key, text string) (*Set, error) {
	p = p.orBuiltin()
	k, ok := keyNamed(key)
	if !ok {
		return nil, fmt.Errorf("unknown key %q", key)
	}
	out := &Set{texts: maps.Clone(p.texts), parsed: maps.Clone(p.parsed)}
	if err := out.set(k, text); err != nil {
		return nil, fmt.Errorf("line %d (%s): %w", textLine(err, 0, text), key, err)
	}
	if err := out.checkToolNames(); err != nil {
		return nil, err
	}
	return out, nil
}

// Format writes the set as a prompt file, keys in their usual order, with no comments:
// parsing it gives the same set back.
func (p *Set) Format() []byte {
	p = p.orBuiltin()
	var b bytes.Buffer
	for _, k := range promptKeys {
		if k.optional && p.texts[k.name] == "" {
			continue
		}
		fmt.Fprintf(&b, "--- %s ---\n%s\n", k.name, p.texts[k.name])
	}
	return b.Bytes()
}

// ForAgents is the set an agent run uses: p with its agent_task, the built-in one when p has
// none, so that the run's copy of the set, and its hash, hold the words the agents were given.
func (p *Set) ForAgents() *Set {
	p = p.orBuiltin()
	if p.texts[keyAgentTask] != "" {
		return p
	}
	out, err := p.with(keyAgentTask, strings.TrimSuffix(builtinAgentTaskText, "\n"))
	if err != nil {
		panic("the built-in agent task: " + err.Error()) // tests keep it valid
	}
	return out
}

// SHA256 identifies the set in a run's header: the hash of Format, so comments, key order
// and a file's final line break do not count, and the built-in set written to a file and
// read back is the same set.
func (p *Set) SHA256() string {
	sum := sha256.Sum256(p.Format())
	return hex.EncodeToString(sum[:])
}

// ShellToolName is the name the set gives the shell tool.
func (p *Set) ShellToolName() string { return p.orBuiltin().texts[keyShellTool] }
