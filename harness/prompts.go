package harness

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/model"
	"github.com/aa-grade/aa-grade/harness/sandbox"
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
	{name: keySystem}, {name: keyTask},
	{name: keyShellTool, toolName: true}, {name: keyShellDescription}, {name: keyShellCmdDescription}, {name: keyShellParamsDesc, optional: true},
	{name: keyFinishTool, toolName: true}, {name: keyFinishDescription}, {name: keyFinishReasonDesc}, {name: keyFinishPathsDesc},
	{name: keyFinishParamsDesc, optional: true},
	{name: keyTurnsLeft, vars: []string{"turns_left"}}, {name: keyLastTurn}, {name: keyContinue},
	{name: keySummaryRequest}, {name: keySummaryBridge, vars: []string{"summary"}}, {name: keySummaryAck},
	{name: keyShellResult, vars: []string{"exit_code", "stdout", "stderr"}},
	{name: keyShellTimeout, vars: []string{"stdout", "stderr"}},
	{name: keyShellError, vars: []string{"error"}},
	{name: keyTruncationNotice, vars: []string{"total"}},
	{name: keyShellInvalidArguments, vars: []string{"arguments"}},
	{name: keyUnknownTool, vars: []string{"tool"}},
	{name: keyFinishInvalidArguments}, {name: keyFinishTwoCalls}, {name: keyFinishNoOutput}, {name: keyFinishOutputOutside},
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
	for _, name := range slices.Sorted(maps.Keys(sandbox.ReferencePackages)) {
		out = append(out, "package_"+name)
	}
	return out
}

// Prompts is a prompt set, parsed and checked. A nil *Prompts is the built-in set.
type Prompts struct {
	texts  map[string]string
	parsed map[string]template
}

//go:embed builtin-prompts.txt
var builtinText []byte

var builtin = mustParsePrompts(builtinText)

// mustParsePrompts parses the built-in set, which tests keep valid.
func mustParsePrompts(doc []byte) *Prompts {
	p, err := ParsePrompts(doc)
	if err != nil {
		panic("the built-in prompt set: " + err.Error())
	}
	return p
}

// BuiltinPrompts is the set a run uses unless told otherwise.
func BuiltinPrompts() *Prompts { return builtin }

// orBuiltin makes a nil set the built-in one.
func (p *Prompts) orBuiltin() *Prompts {
	if p == nil {
		return builtin
	}
	return p
}

// sectionHeader is the line that starts a key's text in a prompt file.
var sectionHeader = regexp.MustCompile(`^--- ([A-Za-z0-9_.-]+) ---$`)

// toolName is what the providers accept as a tool name.
var toolName = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// ParsePrompts reads a prompt file: optional comment lines (`#`) and blank lines, then one
// section per key, each a `--- key ---` line followed by the key's text up to the next
// section (the line break before it is not part of the text). Every key must be there once;
// an unknown key, a placeholder the key does not have, or a malformed section is an error
// naming the line.
func ParsePrompts(doc []byte) (*Prompts, error) {
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
	p := &Prompts{texts: texts, parsed: map[string]template{}}
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
func (p *Prompts) checkToolNames() error {
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
			return nil, nil, fmt.Errorf("line %d: text before the first `--- key ---` line (only # comments may come first)", i+1)
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
func (p *Prompts) set(k promptKey, text string) error {
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

// WithTask returns the set with another task prompt (--prompt-file).
func (p *Prompts) WithTask(text string) (*Prompts, error) { return p.with(keyTask, text) }

// with returns the set with one key's text replaced.
func (p *Prompts) with(key, text string) (*Prompts, error) {
	p = p.orBuiltin()
	k, ok := keyNamed(key)
	if !ok {
		return nil, fmt.Errorf("unknown key %q", key)
	}
	out := &Prompts{texts: maps.Clone(p.texts), parsed: maps.Clone(p.parsed)}
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
func (p *Prompts) Format() []byte {
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

// SHA256 identifies the set in a run's header: the hash of Format, so comments, key order
// and a file's final line break do not count, and the built-in set written to a file and
// read back is the same set.
func (p *Prompts) SHA256() string {
	sum := sha256.Sum256(p.Format())
	return hex.EncodeToString(sum[:])
}

// ShellToolName is the name the set gives the shell tool.
func (p *Prompts) ShellToolName() string { return p.orBuiltin().texts[keyShellTool] }

// promptEnv is what an episode's texts may state about it.
type promptEnv struct {
	workdir        string
	tools          sandbox.Tools
	maxTurns       int
	commandTimeout time.Duration
}

// episodeTexts are a set's texts for one episode, its facts filled in.
type episodeTexts struct {
	p    *Prompts
	vars map[string]string
}

// forEpisode fills the episode's facts into the set.
func (p *Prompts) forEpisode(env promptEnv) episodeTexts {
	p = p.orBuiltin()
	var pythons, have, missing []string
	for _, c := range []string{"python3", "python"} {
		if env.tools.Commands[c] {
			pythons = append(pythons, c)
		}
	}
	vars := map[string]string{
		"workdir": env.workdir, "output_file": grader.SubmissionFile, "output_path": path.Join(env.workdir, grader.SubmissionFile),
		"max_turns": strconv.Itoa(env.maxTurns), "command_timeout": strconv.FormatFloat(env.commandTimeout.Seconds(), 'f', -1, 64),
		"output_limit": strconv.Itoa(sandbox.OutputLimit), "output_half": strconv.Itoa(sandbox.OutputLimit / 2),
		"shell_tool": p.texts[keyShellTool], "finish_tool": p.texts[keyFinishTool],
		"tools": strings.Join(otherCommands(env.tools.Commands), ", "), "python_commands": strings.Join(pythons, ", "),
	}
	for _, name := range slices.Sorted(maps.Keys(sandbox.ReferencePackages)) {
		version := env.tools.Python[name]
		vars["package_"+name] = version
		if version == "" {
			missing = append(missing, name)
		} else {
			have = append(have, name+" "+version)
		}
	}
	vars["python_packages"], vars["missing_packages"] = strings.Join(have, ", "), strings.Join(missing, ", ")
	return episodeTexts{p: p, vars: vars}
}

// otherCommands are the commands found besides the shell and Python, in name order.
func otherCommands(found map[string]bool) []string {
	var out []string
	for _, c := range slices.Sorted(maps.Keys(found)) {
		if found[c] && c != "bash" && c != "python" && c != "python3" {
			out = append(out, c)
		}
	}
	return out
}

// text renders one key with the episode's facts and the message's own values.
func (t episodeTexts) text(key string, values map[string]string) string {
	vars := t.vars
	if len(values) > 0 {
		vars = maps.Clone(t.vars)
		maps.Copy(vars, values)
	}
	var b strings.Builder
	t.p.parsed[key].render(&b, vars)
	return b.String()
}

// tools are the shell and finish tools as the set describes them, the shell first. Their
// schemas are fixed: only the names and descriptions are the set's.
//
// With pydantic true the schemas are shaped as the reference library's, which pydantic makes
// of its parameter classes: a title on the object (the class's name) and on each property
// (the field's name, capitalised), and no additionalProperties.
func (t episodeTexts) tools(pydantic bool) []model.Tool {
	cmd := property("string", t.text(keyShellCmdDescription, nil))
	shell := map[string]any{"type": "object", "required": []string{"cmd"}, "properties": map[string]any{"cmd": cmd}}
	paths := property("array", t.text(keyFinishPathsDesc, nil))
	paths["items"] = map[string]string{"type": "string"}
	reason := property("string", t.text(keyFinishReasonDesc, nil))
	finish := map[string]any{"type": "object", "required": []string{"reason", "paths"},
		"properties": map[string]any{"reason": reason, "paths": paths}}
	describe := func(schema map[string]any, key string) { // an optional key: none when empty
		if d := t.text(key, nil); d != "" {
			schema["description"] = d
		}
	}
	describe(shell, keyShellParamsDesc)
	describe(finish, keyFinishParamsDesc)
	if pydantic {
		shell["title"], cmd["title"] = "CodeExecutionParams", "Cmd"
		finish["title"], reason["title"], paths["title"] = "FinishParams", "Reason", "Paths"
	} else {
		shell["additionalProperties"] = false
	}
	return []model.Tool{
		{Name: t.vars["shell_tool"], Description: t.text(keyShellDescription, nil), Parameters: schemaJSON(shell)},
		{Name: t.vars["finish_tool"], Description: t.text(keyFinishDescription, nil), Parameters: schemaJSON(finish)},
	}
}

// property is a parameter of a tool's schema; an empty description is left out.
func property(typ, description string) map[string]any {
	p := map[string]any{"type": typ}
	if description != "" {
		p["description"] = description
	}
	return p
}

// schemaJSON encodes a schema built of maps, strings and booleans, which cannot fail.
func schemaJSON(schema map[string]any) json.RawMessage {
	b, _ := json.Marshal(schema)
	return b
}

// shellResults is a command's result as the set words it, its streams' truncation notices
// in the set's words too.
func (t episodeTexts) shellResults(r sandbox.Result) string {
	stdout, stderr := t.retell(r.Stdout, r.StdoutChars), t.retell(r.Stderr, r.StderrChars)
	if r.TimedOut {
		return t.text(keyShellTimeout, map[string]string{"stdout": stdout, "stderr": stderr})
	}
	return t.text(keyShellResult, map[string]string{"exit_code": strconv.Itoa(r.ExitCode), "stdout": stdout, "stderr": stderr})
}

// retell puts the set's truncation notice in place of the sandbox's in a stream of total
// characters. The sandbox keeps the first OutputLimit/2 characters, its notice, then the last
// ones; the notice is replaced at exactly that place, so output that merely quotes it stays
// as it is.
func (t episodeTexts) retell(s string, total int64) string {
	if total <= sandbox.OutputLimit {
		return s
	}
	at := runeOffset(s, sandbox.OutputLimit/2)
	notice := sandbox.TruncationNotice(total, sandbox.OutputLimit)
	if at < 0 || !strings.HasPrefix(s[at:], notice) {
		return s
	}
	return s[:at] + t.text(keyTruncationNotice, map[string]string{"total": strconv.FormatInt(total, 10)}) + s[at+len(notice):]
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
