package promptset

import (
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// Facts are what an episode's texts may state about it: the sandbox as the probe found it
// and the loop's limits.
type Facts struct {
	Workdir        string
	Commands       map[string]bool   // command name -> found on the sandbox's PATH
	Python         map[string]string // package -> version ("" when missing)
	MaxTurns       int
	CommandTimeout time.Duration
}

// Texts are a set's texts for one episode, its facts filled in: every message the loop sends
// is one of its methods, so the loop never handles a key or a placeholder.
type Texts struct {
	p    *Set
	vars map[string]string
}

// ForEpisode fills the episode's facts into the set.
func (p *Set) ForEpisode(f Facts) Texts {
	p = p.orBuiltin()
	var pythons, have, missing []string
	for _, c := range []string{"python3", "python"} {
		if f.Commands[c] {
			pythons = append(pythons, c)
		}
	}
	vars := map[string]string{
		"workdir": f.Workdir, "output_file": grader.SubmissionFile,
		"output_path": path.Join(f.Workdir, grader.SubmissionFile), "max_turns": strconv.Itoa(f.MaxTurns),
		"command_timeout": strconv.FormatFloat(f.CommandTimeout.Seconds(), 'f', -1, 64),
		"output_limit":    strconv.Itoa(shellspec.OutputLimit), "output_half": strconv.Itoa(shellspec.OutputLimit / 2),
		"shell_tool": p.texts[keyShellTool], "finish_tool": p.texts[keyFinishTool],
		"tools": strings.Join(otherCommands(f.Commands), ", "), "python_commands": strings.Join(pythons, ", "),
	}
	for _, name := range slices.Sorted(maps.Keys(shellspec.ReferencePackages)) {
		version := f.Python[name]
		vars["package_"+name] = version
		if version == "" {
			missing = append(missing, name)
		} else {
			have = append(have, name+" "+version)
		}
	}
	vars["python_packages"], vars["missing_packages"] = strings.Join(have, ", "), strings.Join(missing, ", ")
	return Texts{p: p, vars: vars}
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
func (t Texts) text(key string, values map[string]string) string {
	vars := t.vars
	if len(values) > 0 {
		vars = maps.Clone(t.vars)
		maps.Copy(vars, values)
	}
	var b strings.Builder
	t.p.parsed[key].render(&b, vars)
	return b.String()
}

// ShellTool and FinishTool are the tools' names in the set.
func (t Texts) ShellTool() string  { return t.vars["shell_tool"] }
func (t Texts) FinishTool() string { return t.vars["finish_tool"] }

// AgentTask is the task an agent run hands over, from a set of ForAgents.
func (t Texts) AgentTask() string { return t.text(keyAgentTask, nil) }

// The messages of an episode, one per key of the set.

func (t Texts) System() string         { return t.text(keySystem, nil) }
func (t Texts) Task() string           { return t.text(keyTask, nil) }
func (t Texts) Continue() string       { return t.text(keyContinue, nil) }
func (t Texts) SummaryRequest() string { return t.text(keySummaryRequest, nil) }
func (t Texts) SummaryAck() string     { return t.text(keySummaryAck, nil) }
func (t Texts) SummaryBridge(summary string) string {
	return t.text(keySummaryBridge, map[string]string{"summary": summary})
}

// TurnsLeft is the warning before each of the last turns, left of them to go.
func (t Texts) TurnsLeft(left int) string {
	if left == 1 {
		return t.text(keyLastTurn, nil)
	}
	return t.text(keyTurnsLeft, map[string]string{"turns_left": strconv.Itoa(left)})
}

// The refusals of a tool call, one per key of the set.

func (t Texts) UnknownTool(name string) string {
	return t.text(keyUnknownTool, map[string]string{"tool": name})
}
func (t Texts) ShellInvalidArguments(arguments string) string {
	return t.text(keyShellInvalidArguments, map[string]string{"arguments": arguments})
}
func (t Texts) ShellError(err error) string {
	return t.text(keyShellError, map[string]string{"error": err.Error()})
}
func (t Texts) FinishInvalidArguments() string { return t.text(keyFinishInvalidArguments, nil) }
func (t Texts) FinishTwoCalls() string         { return t.text(keyFinishTwoCalls, nil) }
func (t Texts) FinishNoOutput() string         { return t.text(keyFinishNoOutput, nil) }
func (t Texts) FinishOutputOutside() string    { return t.text(keyFinishOutputOutside, nil) }
func (t Texts) FinishInvalidOutput(err error) string {
	return t.text(keyFinishInvalidOutput, map[string]string{"error": err.Error()})
}
func (t Texts) FinishUnreadableOutput(err error) string {
	return t.text(keyFinishUnreadableOutput, map[string]string{"error": err.Error()})
}
func (t Texts) FinishPathMissing(path string) string {
	return t.text(keyFinishPathMissing, map[string]string{"path": path})
}
func (t Texts) FinishPathOutside(path string) string {
	return t.text(keyFinishPathOutside, map[string]string{"path": path})
}
func (t Texts) FinishPathRefused(path string, err error) string {
	return t.text(keyFinishPathRefused, map[string]string{"path": path, "error": err.Error()})
}

// Tools are the shell and finish tools as the set describes them, the shell first. Their
// schemas are fixed: only the names and descriptions are the set's.
//
// With pydantic true the schemas are shaped as the reference library's, which pydantic makes
// of its parameter classes: a title on the object (the class's name) and on each property
// (the field's name, capitalised), and no additionalProperties.
func (t Texts) Tools(pydantic bool) []model.Tool {
	cmd := property("string", t.text(keyShellCmdDescription, nil))
	shell := map[string]any{"type": "object", "required": []string{"cmd"}, "properties": fields{{"cmd", cmd}}}
	paths := property("array", t.text(keyFinishPathsDesc, nil))
	paths["items"] = map[string]string{"type": "string"}
	reason := property("string", t.text(keyFinishReasonDesc, nil))
	finish := map[string]any{"type": "object", "required": []string{"reason", "paths"},
		"properties": fields{{"reason", reason}, {"paths", paths}}}
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

// fields are a schema's properties in the order the reference library's parameter classes
// declare them (reason before paths), which the model reads: a map would sort them.
type fields []struct {
	name   string
	schema map[string]any
}

// MarshalJSON writes the properties as one object, in their order.
func (f fields) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, p := range f {
		if i > 0 {
			b = append(b, ',')
		}
		name, _ := json.Marshal(p.name)
		schema, err := json.Marshal(p.schema)
		if err != nil {
			return nil, fmt.Errorf("property %s: %w", p.name, err)
		}
		b = append(append(append(b, name...), ':'), schema...)
	}
	return append(b, '}'), nil
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
