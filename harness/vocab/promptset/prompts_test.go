package promptset

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
	"github.com/aa-grade/aa-grade/internal/testsupport/shareddata"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// fullTools is the reference sandbox: every command and package the probe looks for.
var fullTools = Facts{
	Commands: map[string]bool{"bash": true, "cat": true, "grep": true, "jq": true, "python3": true, "python": true},
	Python:   map[string]string{"drain3": "0.9.11", "numpy": "2.4.5", "pandas": "3.0.3"},
}

func taskFor(tools Facts) string {
	env := Facts{Workdir: "/home/user", Commands: tools.Commands, Python: tools.Python, MaxTurns: 100, CommandTimeout: 300 * time.Second}
	return Builtin().ForEpisode(env).Task()
}

func TestTaskPromptCarriesTheContract(t *testing.T) {
	p := taskFor(fullTools)
	for _, want := range []string{
		"/home/user", "/home/user/agent_output.json", "Python (python3, python) with drain3 0.9.11, numpy 2.4.5, pandas 3.0.3;",
		"bash with cat, grep, jq;", "namespace/Kind/name", "No UIDs", `{"contributing_factors": [{"name": "namespace/Kind/name", "reasoning":`,
		"Irreducibility", "Downstream symptoms", "independently", "most specific object",
		"call the finish tool", "alerts", "metrics", "traces", "read them with pandas",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("the task prompt lacks %q", want)
		}
	}
	if strings.Contains(p, "{{") || strings.Contains(p, "without") {
		t.Errorf("the task prompt has a placeholder left or a package missing:\n%s", p)
	}
}

// TestTaskPromptSaysOnlyWhatIsThere (issue 12, point 14): the tools and packages the prompt
// names are those the probe found, and it advises pandas only where pandas is.
func TestTaskPromptSaysOnlyWhatIsThere(t *testing.T) {
	noPandas := taskFor(Facts{
		Commands: map[string]bool{"bash": true, "grep": true, "python3": true},
		Python:   map[string]string{"drain3": "", "numpy": "2.1.0", "pandas": ""},
	})
	for _, want := range []string{"bash with grep;", "Python (python3) with numpy 2.1.0, without drain3, pandas;", "read them with Python's csv module"} {
		if !strings.Contains(noPandas, want) {
			t.Errorf("without python and pandas, the task prompt lacks %q", want)
		}
	}
	for _, lie := range []string{"python3, python", "python and python3", "with pandas", "jq", "pandas 3"} {
		if strings.Contains(noPandas, lie) {
			t.Errorf("without python and pandas, the task prompt says %q", lie)
		}
	}
	noPython := taskFor(Facts{Commands: map[string]bool{"bash": true}, Python: map[string]string{}})
	textcheck.Has(t, "the task prompt with no Python at all", noPython, "Tools: bash; no Python; no network.", "parse them as CSV with a tab separator")
	textcheck.Lacks(t, "the task prompt with no Python at all", noPython, "python3", "Python's csv")
}

// exampleEntity finds what a text offers as an entity name: namespace/Kind/name.
var exampleEntity = regexp.MustCompile(`[a-z0-9][a-z0-9.-]*/[A-Z][A-Za-z]*/[a-z0-9][a-z0-9.-]*`)

// TestExamplesNameNoGroundTruth (issue 12, point 13): no entity a prompt set gives as an
// example names anything a real, demo or generated ground truth names, so an example is
// never an answer.
func TestExamplesNameNoGroundTruth(t *testing.T) {
	truths := realGroundTruths(t)
	maps.Copy(truths, demoGroundTruths(t))
	for name, set := range map[string]*Set{"built-in": Builtin(), "stirrup": stirrupPrompts(t)} {
		var examples []string
		for _, k := range promptKeys {
			examples = append(examples, exampleEntity.FindAllString(set.texts[k.name], -1)...)
		}
		if len(examples) < 4 {
			t.Fatalf("%s: only %d example entities found (%v): the test no longer sees them", name, len(examples), examples)
		}
		for _, ex := range examples {
			var hits []string
			for _, id := range slices.Sorted(maps.Keys(truths)) {
				if why := namesGroundTruth(truths[id], grader.ParseEntity(ex)); why != "" {
					hits = append(hits, id+": "+why)
				}
			}
			if len(hits) > 0 {
				t.Errorf("%s: the example %s names what %d ground truths name, first %s", name, ex, len(hits), hits[0])
			}
		}
	}
}

// namesGroundTruth says how an entity names something of a ground truth ("" when it does not):
// it maps to a group, or its namespace or name is a group's id, name or namespace, or matches
// a group's name filter (a glob that matches anything aside).
func namesGroundTruth(gt *grader.GroundTruth, e grader.Entity) string {
	if i := gt.MatchGroup(e); i >= 0 {
		return "maps to group " + gt.Groups[i].ID
	}
	for _, g := range gt.Groups {
		for _, part := range []string{e.Namespace, e.Name} {
			for _, named := range []string{g.ID, g.Name, g.Namespace} {
				if named != "" && strings.EqualFold(part, named) {
					return "shares the name " + part + " with group " + g.ID
				}
			}
			for _, f := range g.Filters {
				if !f.Glob && f.Matches(part) {
					return "has " + part + " matching a filter of group " + g.ID
				}
			}
		}
	}
	return ""
}

// realGroundTruths are the public ones under ../shared/itbench, by file and entry.
func realGroundTruths(t *testing.T) map[string]*grader.GroundTruth {
	dir := filepath.Join(shareddata.Dir(t), "ground-truth")
	out := map[string]*grader.GroundTruth{}
	files, err := filepath.Glob(filepath.Join(dir, "itbench-github", "*.yaml"))
	if err != nil || len(files) < 39 {
		t.Fatalf("found %d ground truths (%v)", len(files), err)
	}
	for _, f := range files {
		doc, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[filepath.Base(f)] = mustGroundTruth(t, doc)
	}
	var list []json.RawMessage
	doc, err := os.ReadFile(filepath.Join(dir, "ibm-evaluations-ground_truths.json"))
	if err != nil || json.Unmarshal(doc, &list) != nil {
		t.Fatalf("the evaluations list: %v", err)
	}
	for i, raw := range list {
		out["evaluations entry "+strconv.Itoa(i)] = mustGroundTruth(t, raw)
	}
	return out
}

// demoGroundTruths are those of the embedded demo dataset, generated tasks one per fault kind.
func demoGroundTruths(t *testing.T) map[string]*grader.GroundTruth {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ds, err := data.Open(context.Background(), data.DemoSpec, data.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*grader.GroundTruth{}
	for _, task := range ds.Tasks {
		out["demo "+task.ID] = mustGroundTruth(t, task.GroundTruth)
	}
	return out
}

func mustGroundTruth(t *testing.T, doc []byte) *grader.GroundTruth {
	t.Helper()
	gt, err := grader.ParseGroundTruth(doc)
	if err != nil {
		t.Fatal(err)
	}
	return gt
}

// stirrupPrompts is the set FromStirrup makes of the fixture laid out like Stirrup's files: a
// set in other words than the built-in one, the truncation notice and shell results included.
func stirrupPrompts(t *testing.T) *Set {
	t.Helper()
	pkg := layoutPackage(t)
	p, err := fromStirrupFS(pkg, layoutSums(t, pkg))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// truncated is what the sandbox hands back of a stream of total characters (x then y).
func truncated(total int) string {
	c := wire.NewCapture(shellspec.OutputLimit)
	c.Write([]byte(strings.Repeat("x", total/2) + strings.Repeat("y", total-total/2)))
	return c.String()
}

func TestShellResultsInTheSetsWords(t *testing.T) {
	tx := Builtin().ForEpisode(Facts{Workdir: "/w", Commands: fullTools.Commands, Python: fullTools.Python, MaxTurns: 100, CommandTimeout: 90 * time.Second})
	if got := tx.ShellResult(CommandResult{ExitCode: 2, Stdout: "a\n", Stderr: "b\n"}); got != "<shell_results>\n<exit_code>2</exit_code>\n<stdout>a\n</stdout>\n<stderr>b\n</stderr>\n</shell_results>" {
		t.Errorf("%q", got)
	}
	late := tx.ShellResult(CommandResult{ExitCode: -1, TimedOut: true, Stdout: "partial"})
	textcheck.Has(t, "the result of a command timed out", late,
		"<error_kind>timeout</error_kind>\n<details>the command did not finish within 90 seconds", "stdout before it was killed:\npartial")
	textcheck.Lacks(t, "the result of a command timed out", late, "stderr before")
	long := truncated(30000)
	got := tx.retell(long, 30000)
	if want := strings.Repeat("x", 10000) + "\n[... output truncated: 30000 characters in all, limit 20000; the first and last 10000 are shown ...]\n" + strings.Repeat("y", 10000); got != want {
		t.Errorf("the built-in notice moved: %q", got[9990:10200])
	}
	custom, err := Builtin().with(keyTruncationNotice, "<cut {{total}}>")
	if err != nil {
		t.Fatal(err)
	}
	ctx := custom.ForEpisode(Facts{})
	if got := ctx.retell(long, 30000); got != strings.Repeat("x", 10000)+"<cut 30000>"+strings.Repeat("y", 10000) {
		t.Errorf("the set's notice is not in place: %q", got[9990:10030])
	}
	// Output that only quotes a notice, elsewhere than where the sandbox puts it, stays as it is.
	quoted := shellspec.TruncationNotice(30000, shellspec.OutputLimit) + long[:len(long)-len(shellspec.TruncationNotice(30000, shellspec.OutputLimit))]
	if got := ctx.retell(quoted, 30000); got != quoted {
		t.Error("a quoted notice was replaced")
	}
}

func TestToolDefinitions(t *testing.T) {
	tools := Builtin().ForEpisode(Facts{CommandTimeout: 45 * time.Second}).Tools(false)
	var shell, finish struct {
		Type                 string `json:"type"`
		Properties           map[string]struct{ Type, Description string }
		Required             []string `json:"required"`
		AdditionalProperties *bool    `json:"additionalProperties"`
	}
	if len(tools) != 2 {
		t.Fatalf("%d tools, want 2: %+v", len(tools), tools)
	}
	if err := json.Unmarshal(tools[0].Parameters, &shell); err != nil {
		t.Fatalf("the shell tool's parameters %s: %v", tools[0].Parameters, err)
	}
	if err := json.Unmarshal(tools[1].Parameters, &finish); err != nil {
		t.Fatalf("the finish tool's parameters %s: %v", tools[1].Parameters, err)
	}
	for _, c := range []struct{ what, got, want string }{
		{"the shell tool's name", tools[0].Name, "code_exec"},
		{"the shell tool's parameters' type", shell.Type, "object"},
		{"the shell tool's cmd's type", shell.Properties["cmd"].Type, "string"},
		{"the finish tool's name", tools[1].Name, "finish"},
		{"the finish tool's paths' type", finish.Properties["paths"].Type, "array"},
	} {
		if c.got != c.want {
			t.Errorf("%s %q, want %q", c.what, c.got, c.want)
		}
	}
	if len(shell.Properties) != 1 {
		t.Errorf("the shell tool's properties %+v, want cmd alone", shell.Properties)
	}
	if shell.Properties["cmd"].Description == "" {
		t.Errorf("the shell tool's cmd has no description")
	}
	if want := []string{"cmd"}; !slices.Equal(shell.Required, want) {
		t.Errorf("the shell tool requires %q, want %q", shell.Required, want)
	}
	if a := shell.AdditionalProperties; a == nil || *a {
		t.Errorf("the shell tool's additionalProperties %v, want false", a)
	}
	textcheck.Has(t, "the shell tool's description", tools[0].Description, "after 45 seconds")
	if finish.Properties["reason"].Description == "" {
		t.Errorf("the finish tool's reason has no description")
	}
	if len(finish.Required) != 2 {
		t.Errorf("the finish tool requires %q, want 2", finish.Required)
	}
	textcheck.Has(t, "the finish tool's description", tools[1].Description, "agent_output.json")
}

// TestReferenceToolSchemas: the reference loop's schemas are shaped as pydantic shapes the
// reference library's parameter classes: titles on the objects and the properties, no
// additionalProperties.
func TestReferenceToolSchemas(t *testing.T) {
	tools := Builtin().ForEpisode(Facts{CommandTimeout: 45 * time.Second}).Tools(true)
	for i, want := range []map[string]string{
		{"title": "CodeExecutionParams", "properties.cmd.title": "Cmd", "properties.cmd.type": "string", "required.0": "cmd", "additionalProperties": ""},
		{"title": "FinishParams", "properties.reason.title": "Reason", "properties.paths.title": "Paths", "properties.paths.items.type": "string",
			"required.1": "paths"},
	} {
		for path, w := range want {
			if got := gjson.GetBytes(tools[i].Parameters, path).String(); got != w {
				t.Errorf("tool %s: %s = %q, want %q", tools[i].Name, path, got, w)
			}
		}
	}
}

// TestToolSchemaOrder: both loops list the finish tool's properties as the reference
// library's class declares them, reason before paths (the model reads them in that order).
func TestToolSchemaOrder(t *testing.T) {
	for _, pydantic := range []bool{false, true} {
		tools := Builtin().ForEpisode(Facts{CommandTimeout: 45 * time.Second}).Tools(pydantic)
		var names []string
		gjson.GetBytes(tools[1].Parameters, "properties").ForEach(func(name, _ gjson.Result) bool {
			names = append(names, name.String())
			return true
		})
		if got := strings.Join(names, ","); got != "reason,paths" {
			t.Errorf("pydantic %v: the finish tool's properties are %s, want reason,paths", pydantic, got)
		}
	}
}

// TestPromptFileRoundTrip: a set written out reads back the same, with the same hash, whatever
// the comments and the order of its sections.
func TestPromptFileRoundTrip(t *testing.T) {
	b := Builtin()
	again, err := Parse(b.Format())
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	if string(again.Format()) != string(b.Format()) {
		t.Errorf("round trip: the set reads back as\n%s\nwant\n%s", again.Format(), b.Format())
	}
	if again.SHA256() != b.SHA256() {
		t.Errorf("round trip: SHA256 %s, want %s", again.SHA256(), b.SHA256())
	}
	if len(b.SHA256()) != 64 {
		t.Errorf("SHA256 %q, want 64 hex digits", b.SHA256())
	}

	reordered := "# a comment\n\n"
	for i := len(promptKeys) - 1; i >= 0; i-- {
		reordered += "--- " + promptKeys[i].name + " ---\n" + b.texts[promptKeys[i].name] + "\n"
	}
	if p, err := Parse([]byte(reordered)); err != nil || p.SHA256() != b.SHA256() {
		t.Fatalf("reordered set: %v", err)
	}
	if (*Set)(nil).SHA256() != b.SHA256() {
		t.Fatal("nil is not the built-in set")
	}
	edited, err := b.WithTask("Find it in {{workdir}}; write {{output_path}}.")
	if err != nil || edited.SHA256() == b.SHA256() {
		t.Fatalf("another task: %v", err)
	}
	for _, bad := range []string{"", " \n\t", "Find it in {{workdir}}."} {
		if _, err := b.WithTask(bad); !errors.Is(err, ErrTaskPrompt) {
			t.Errorf("task prompt %q: %v, want ErrTaskPrompt", bad, err)
		}
	}
	// Trailing line breaks are part of a text: an empty line before the next section.
	nl, err := b.with(keyContinue, "go on\n")
	if err != nil {
		t.Fatal(err)
	}
	back, err := Parse(nl.Format())
	if err != nil || back.texts[keyContinue] != "go on\n" {
		t.Fatalf("a text ending in a line break reads back %q (%v)", back.texts[keyContinue], err)
	}
}

func TestPromptFileErrors(t *testing.T) {
	valid := string(Builtin().Format())
	for name, c := range map[string]struct{ doc, want string }{
		"missing key":       {strings.Replace(valid, "--- last_turn ---\n", "", 1), "missing keys: last_turn"},
		"unknown key":       {valid + "--- lasst_turn ---\nx\n", `unknown key "lasst_turn"`},
		"key twice":         {valid + "--- continue ---\nx\n", `key "continue" again`},
		"text before":       {"hello\n" + valid, "line 1: text before the first"},
		"unknown variable":  {strings.Replace(valid, "--- continue ---\n", "--- continue ---\nkeep\ngoing {{turns_left}}\n", 1), "(continue): unknown placeholder {{turns_left}}"},
		"misspelt variable": {strings.Replace(valid, "{{workdir}}", "{{work_dir}}", 1), "(task): unknown placeholder {{work_dir}}"},
		"if without end":    {strings.Replace(valid, "--- continue ---\n", "--- continue ---\n{{if tools}}x\n", 1), "(continue): {{if tools}} without {{end}}"},
		"end without if":    {strings.Replace(valid, "--- continue ---\n", "--- continue ---\n{{end}}\n", 1), "(continue): {{end}} without {{if}}"},
		"unclosed":          {strings.TrimSuffix(valid, "\n") + " {{tools\n", "(finish_path_refused): {{ without }}"},
		"bad tool name":     {strings.Replace(valid, "--- finish_tool ---\nfinish\n", "--- finish_tool ---\nfinish now\n", 1), "(finish_tool): a tool name is"},
		"same tool names":   {strings.Replace(valid, "--- finish_tool ---\nfinish\n", "--- finish_tool ---\ncode_exec\n", 1), "shell_tool and finish_tool are both"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one with %q", err, c.want)
			}
		})
	}
	// The line given is the one with the problem.
	doc := strings.Replace(valid, "--- continue ---\n", "--- continue ---\nkeep\ngoing {{turns_left}}\n", 1)
	line := strings.Count(doc[:strings.Index(doc, "going {{turns_left}}")], "\n") + 1
	if _, err := Parse([]byte(doc)); err == nil || !strings.HasPrefix(err.Error(), "line "+strconv.Itoa(line)+" ") {
		t.Fatalf("error %v, want line %d", err, line)
	}
}

func TestTemplates(t *testing.T) {
	allowed := map[string]bool{"a": true, "b": true}
	for text, want := range map[string]string{
		"plain {x} }}":                                      "plain {x} }}",
		"[{{a}}|{{ b }}]":                                   "[A|]",
		"{{if a}}yes{{end}}{{if b}}no{{end}}":               "yes",
		"{{if b}}no{{else}}{{if a}}nested{{end}}{{end}}":    "nested",
		"{{if a}}{{if b}}x{{else}}y{{end}}{{else}}z{{end}}": "y",
	} {
		tmpl, err := parseTemplate(text, allowed)
		if err != nil {
			t.Errorf("%q: %v", text, err)
			continue
		}
		var b strings.Builder
		tmpl.render(&b, map[string]string{"a": "A"})
		if b.String() != want {
			t.Errorf("%q renders %q, want %q", text, b.String(), want)
		}
	}
	for _, bad := range []string{"{{c}}", "{{if a}}x", "{{else}}", "{{if a}}x{{else}}y{{else}}z{{end}}", "{{a b}}", "{{ }}", "{{if}}"} {
		if _, err := parseTemplate(bad, allowed); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

// TestDocumentedKeys keeps docs/prompts.md in step with the keys and their placeholders.
func TestDocumentedKeys(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/prompts.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range promptKeys {
		if !strings.Contains(string(doc), "`"+k.name+"`") {
			t.Errorf("docs/prompts.md does not describe the key %s", k.name)
		}
		for _, v := range k.vars {
			if !strings.Contains(string(doc), "`{{"+v+"}}`") {
				t.Errorf("docs/prompts.md does not describe the placeholder {{%s}}", v)
			}
		}
	}
	for _, v := range episodeVariables {
		if !strings.Contains(string(doc), "`{{"+v+"}}`") && !strings.HasPrefix(v, "package_") {
			t.Errorf("docs/prompts.md does not describe the placeholder {{%s}}", v)
		}
	}
}

// TestAgentTask: an agent run hands over the set's agent_task, else the built-in one, which is
// the task without the finish tool; the built-in set (and so the loop's hash) holds no agent
// task, the agent run's set does.
func TestAgentTask(t *testing.T) {
	facts := Facts{Workdir: "/home/user", MaxTurns: 12, CommandTimeout: time.Minute}
	agents := Builtin().ForAgents()
	got := agents.ForEpisode(facts).AgentTask()
	if !strings.Contains(got, "/home/user/agent_output.json") {
		t.Errorf("the built-in agent task does not say where the answer goes:\n%s", got)
	}
	if finish := agents.ForEpisode(facts).FinishTool(); strings.Contains(got, finish) {
		t.Errorf("the built-in agent task names the %s tool, which an agent does not have:\n%s", finish, got)
	}
	if got == agents.ForEpisode(facts).Task() {
		t.Error("the agent task should differ from the loop's")
	}
	if bytes.Contains(Builtin().Format(), []byte(keyAgentTask)) {
		t.Error("the built-in set's file (and so the loop's hash) should not hold the agent task")
	}
	if !bytes.Contains(agents.Format(), []byte("--- "+keyAgentTask+" ---")) || agents.SHA256() == Builtin().SHA256() {
		t.Error("an agent run's copy of the set, and its hash, must hold the agent task it hands over")
	}
	own, err := Builtin().with(keyAgentTask, "Answer in {{output_path}} within {{max_turns}} calls.")
	if err != nil {
		t.Fatal(err)
	}
	if own.ForAgents() != own {
		t.Error("a set with an agent task of its own keeps it")
	}
	if got := own.ForAgents().ForEpisode(facts).AgentTask(); got != "Answer in /home/user/agent_output.json within 12 calls." {
		t.Errorf("a set's own agent task renders %q", got)
	}
	if _, err := Builtin().with(keyAgentTask, "{{no_such_placeholder}}"); err == nil {
		t.Error("an agent task with an unknown placeholder was accepted")
	}
}
