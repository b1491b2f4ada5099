//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/internal/testsupport/fakemodel"
	"github.com/aa-grade/aa-grade/internal/testsupport/jsonschema"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// scriptedCall is the tool call of turn n of the scripted providers below: a listing, then
// the diagnosis written, then finish.
func scriptedCall(n int) (name, args string) {
	switch n {
	case 1:
		return "code_exec", `{"cmd": "ls alerts"}`
	case 2:
		return "code_exec", `{"cmd": "echo '{\"contributing_factors\": [{\"name\": \"otel-demo/ConfigMap/flagd-config\"}]}' > agent_output.json"}`
	}
	return "finish", `{"reason": "done", "paths": ["agent_output.json"]}`
}

// fakeAnthropic answers the Messages API by the script, each reply with a thinking block (its
// reasoning), a text and a tool_use block, and usage with cache reads and writes.
func fakeAnthropic(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	turn := 1 + strings.Count(gjson.GetBytes(body, `messages.#(role=="assistant")#.role`).Raw, "assistant")
	name, args := scriptedCall(turn)
	json.NewEncoder(w).Encode(map[string]any{"id": fmt.Sprintf("msg_%d", turn), "type": "message", "role": "assistant",
		"stop_reason": "tool_use", "content": []any{
			map[string]any{"type": "thinking", "thinking": fmt.Sprintf("Turn %d: the alerts first.", turn), "signature": "sig"},
			map[string]any{"type": "text", "text": fmt.Sprintf("Step %d.", turn)},
			map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", turn), "name": name, "input": json.RawMessage(args)}},
		"usage": map[string]any{"input_tokens": 900, "output_tokens": 40, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 50}})
}

// fakeResponses answers the Responses API by the script, each reply with a reasoning item
// whose summary is readable.
func fakeResponses(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	turn := 1 + int(gjson.GetBytes(body, `input.#(type=="function_call")#`).Get("#").Int())
	name, args := scriptedCall(turn)
	json.NewEncoder(w).Encode(map[string]any{"status": "completed", "error": nil, "output": []any{
		map[string]any{"id": "rs", "type": "reasoning", "summary": []any{map[string]any{"type": "summary_text", "text": fmt.Sprintf("Turn %d: the alerts first.", turn)}}},
		map[string]any{"type": "function_call", "call_id": fmt.Sprintf("call_%d", turn), "name": name, "arguments": args}},
		"usage": map[string]any{"input_tokens": 1000, "output_tokens": 50, "input_tokens_details": map[string]any{"cached_tokens": 200},
			"output_tokens_details": map[string]any{"reasoning_tokens": 30}}})
}

// TestExportOfEachProvider runs one demo episode with each kind of model (Chat Completions,
// Anthropic, the Responses API, the baseline, a replay of the Anthropic run), exports it in
// both formats and checks: every
// ATIF document is valid by the schema and the format's rules, holds the reasoning the
// provider sent, every tool result in the step of its call, the tokens the run counted; the
// export grades as the run did; the chat lines read back (checkChat).
func TestExportOfEachProvider(t *testing.T) {
	schema := atifSchema(t)
	chat := httptest.NewServer(&fakemodel.Server{Script: fakemodel.Script{Turns: 3, Command: "ls alerts", Answer: []string{"otel-demo/ConfigMap/flagd-config"}}})
	defer chat.Close()
	anthropic := httptest.NewServer(http.HandlerFunc(fakeAnthropic))
	defer anthropic.Close()
	responses := httptest.NewServer(http.HandlerFunc(fakeResponses))
	defer responses.Close()
	root, runs := t.TempDir(), map[string]string{} // each kind's run folder
	for _, p := range []struct {
		name, model, reasoning string
		env                    []string
	}{
		{"openai", "openai/fake", "", []string{"OPENAI_BASE_URL=" + chat.URL, "OPENAI_API_KEY=sk-test-0123456789"}},
		{"anthropic", "anthropic/claude-fake", "Turn 1: the alerts first.", []string{"ANTHROPIC_BASE_URL=" + anthropic.URL, "ANTHROPIC_API_KEY=sk-ant-test-0123456789"}},
		{"responses", "openai-responses/fake", "Turn 1: the alerts first.", []string{"OPENAI_BASE_URL=" + responses.URL, "OPENAI_API_KEY=sk-test-0123456789"}},
		{"baseline", "builtin/baseline", "", nil},
		{"replay", "", "Turn 1: the alerts first.", nil}, // replay/ the anthropic run, set below
	} {
		t.Run(p.name, func(t *testing.T) {
			dir := filepath.Join(root, p.name)       // the parent's: a later subtest replays it
			run := filepath.Join(dir, "runs", "run") // its export beside runs/, its own
			if p.name == "replay" {
				if runs["anthropic"] == "" {
					t.Skip("no anthropic run to replay")
				}
				p.model = "replay/" + runs["anthropic"]
			}
			runs[p.name] = run
			env := append([]string{"XDG_CACHE_HOME=" + t.TempDir()}, p.env...)
			if r := aaGrade(t, env, "run", "--dataset", "demo", "--model", p.model, "--tasks", "901", "--repeats", "1", "--out", run); r.code != 0 {
				t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
			}
			if r := aaGrade(t, nil, "export", run, "--format", "atif"); r.code != 0 || !strings.Contains(r.stdout, "Exported 1 episode") {
				t.Fatalf("export: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			doc := filepath.Join(exportOf(run, "atif"), "Scenario-901", "1", atif.File)
			checkATIF(t, schema, doc, run, p.reasoning)
			if keep := os.Getenv("AA_GRADE_KEEP_ATIF"); keep != "" { // the Python reference's inputs (harness/vocab/atif/testdata)
				b, _ := os.ReadFile(doc)
				os.WriteFile(filepath.Join(keep, p.name+".json"), b, 0o644)
			}
			runScore := aaGrade(t, nil, "grade", "--json", run)
			exported := aaGrade(t, nil, "grade", "--json", "--dataset", "demo", "--repeats", "1", exportOf(run, "atif"))
			runScore.wantExit(t, 0)
			exported.wantExit(t, 0)
			if got, want := gjson.Get(exported.stdout, `per_task.#(task=="Scenario-901").score`).Float(), gjson.Get(runScore.stdout, "score").Float(); got != want {
				t.Errorf("the export scores %v, the run %v:\n%s\n%s%s", got, want, runScore.stdout, exported.stdout, exported.stderr)
			}
			if r := aaGrade(t, nil, "export", run, "--format", "openai-jsonl", "--out", filepath.Join(dir, "chat")); r.code != 0 {
				t.Fatalf("export openai-jsonl: exit %d\n%s", r.code, r.stderr)
			}
			checkChat(t, filepath.Join(dir, "chat"), []string{"Scenario-901"})
		})
	}
}

// checkATIF checks an exported document against the schema and the format's rules, and its
// content against the run.
func checkATIF(t *testing.T, schema *jsonschema.Schema, path, run, reasoning string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(b); err != nil {
		t.Errorf("%s is not valid by atif.schema.json: %v", path, err)
	}
	var doc atif.Trajectory
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if err := atif.Check(&doc); err != nil {
		t.Errorf("%s breaks the format's rules: %v", path, err)
	}
	if doc.SchemaVersion != atif.Version {
		t.Errorf("version %s, want %s", doc.SchemaVersion, atif.Version)
	}
	if doc.Steps[0].Source != atif.SourceSystem {
		t.Errorf("step 1 from %s, want %s", doc.Steps[0].Source, atif.SourceSystem)
	}
	if doc.Steps[1].Source != atif.SourceUser {
		t.Errorf("step 2 from %s, want %s", doc.Steps[1].Source, atif.SourceUser)
	}
	calls, results, sawReasoning := 0, 0, false
	for _, s := range doc.Steps {
		calls += len(s.ToolCalls)
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if r.SourceCallID != "" {
					results++
				}
			}
		}
		sawReasoning = sawReasoning || (reasoning != "" && strings.Contains(s.ReasoningContent, reasoning))
	}
	// Every call but those of the last reply (no later call read their results) has its result.
	if calls < 3 || results < calls-2 {
		t.Errorf("%d tool calls, %d results in their steps", calls, results)
	}
	if reasoning != "" && !sawReasoning {
		t.Errorf("no step holds the reasoning %q", reasoning)
	}
	r, err := runfolder.Read(run)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Results[runfolder.Episode{Task: "Scenario-901", Repeat: 1}]
	m := doc.FinalMetrics
	for _, c := range []struct {
		name      string
		got, want int64
	}{{"prompt", *m.TotalPromptTokens, res.Tokens.Input}, {"completion", *m.TotalCompletionTokens, res.Tokens.Output}, {"cached", *m.TotalCachedTokens, res.Tokens.CachedRead}} {
		if c.got != c.want {
			t.Errorf("final metrics: %d %s tokens, the run counted %d", c.got, c.name, c.want)
		}
	}
	if last := doc.Steps[len(doc.Steps)-1]; last.Observation == nil || !strings.Contains(string(*last.Observation.Results[0].Content), "contributing_factors") {
		t.Errorf("the last step is not the submission: %+v", last)
	}
}

// checkChat checks an openai-jsonl export as the tools that read the format do: the folder's
// one *.jsonl or *.json file is the chat file (a loader that reads every one of them takes no
// other), each line has OpenAI's keys only and an episode's messages, each message a role the
// API knows, each call an id unique in its line, each tool result the answer to a call of the
// assistant message before it; the index names the episodes, a line each, in tasks' order.
func checkChat(t *testing.T, dir string, tasks []string) {
	t.Helper()
	var data []string
	for _, pattern := range []string{"*.jsonl", "*.json"} {
		found, err := filepath.Glob(filepath.Join(dir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		data = append(data, found...)
	}
	if len(data) != 1 || filepath.Base(data[0]) != chatFile {
		t.Errorf("the files a loader of *.jsonl and *.json takes: %q, want %s alone", data, chatFile)
	}
	f, err := os.Open(filepath.Join(dir, chatFile))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	lines := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		lines++
		var line map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		for k := range line {
			if k != "messages" && k != "tools" {
				t.Errorf("a line has the key %q, which OpenAI's files do not", k)
			}
		}
		var msgs []struct {
			Role       string `json:"role"`
			ToolCallID string `json:"tool_call_id"`
			ToolCalls  []struct {
				ID string `json:"id"`
			} `json:"tool_calls"`
		}
		if err := json.Unmarshal(line["messages"], &msgs); err != nil {
			t.Fatalf("line %d's messages: %v", lines, err)
		}
		if len(msgs) < 4 {
			t.Fatalf("%d messages, want 4 or more: %s", len(msgs), line["messages"])
		}
		used, open := map[string]bool{}, map[string]bool{}
		for i, m := range msgs {
			switch m.Role {
			case "system", "user":
			case "assistant":
				clear(open)
				for _, c := range m.ToolCalls {
					if used[c.ID] {
						t.Errorf("line %d, message %d: the call id %q was given before", lines, i+1, c.ID)
					}
					used[c.ID], open[c.ID] = true, true
				}
			case "tool":
				if !open[m.ToolCallID] {
					t.Errorf("line %d, message %d: a tool result answers %q, no open call of the assistant before it", lines, i+1, m.ToolCallID)
				}
				delete(open, m.ToolCallID)
			default:
				t.Errorf("line %d, message %d: the role %q, which the API does not know", lines, i+1, m.Role)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	index := strings.Split(strings.TrimSpace(readFile(t, filepath.Join(dir, chatIndex))), "\n")
	if lines != len(tasks) {
		t.Errorf("%d lines, want %d", lines, len(tasks))
	}
	if len(index) != len(tasks) {
		t.Fatalf("index of %d lines, want %d:\n%s", len(index), len(tasks), strings.Join(index, "\n"))
	}
	for i, task := range tasks {
		if want := fmt.Sprintf(`"line":%d,"task":%q`, i+1, task); !strings.Contains(index[i], want) {
			t.Errorf("index line %d %s, want %s", i+1, index[i], want)
		}
	}
}

// TestExportRefusals: a bad format, a folder that is no run and an --out holding files are
// usage errors that write nothing; an episode whose trajectory is broken is named (exit 1)
// and the others are exported.
func TestExportRefusals(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if r := aaGrade(t, []string{"XDG_CACHE_HOME=" + t.TempDir()}, "run", "--dataset", "demo", "--model", "builtin/baseline", "--tasks", "901,902", "--repeats", "1", "--out", run); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	full := filepath.Join(dir, "full")
	os.MkdirAll(full, 0o755)
	os.WriteFile(filepath.Join(full, "mine.txt"), []byte("keep"), 0o644)
	for name, c := range map[string]struct {
		args []string
		want string
	}{
		"bad format": {[]string{"export", run, "--format", "csv"}, `--format "csv": must be atif`},
		"not a run":  {[]string{"export", dir, "--format", "atif"}, "not a run folder"},
		"full --out": {[]string{"export", run, "--format", "atif", "--out", full}, "the folder is not empty"},
		"two runs":   {[]string{"export", run, run, "--format", "atif"}, "export needs one RUN folder, got 2 arguments"},
		"no format":  {[]string{"export", run}, "format"},
		"among runs": {[]string{"export", run, "--format", "atif", "--out", filepath.Join(dir, "run-atif")},
			"holds run folders (" + run + " among them), and report and view would take the export for one"},
	} {
		if r := aaGrade(t, nil, c.args...); r.code != 2 || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: exit %d\n%s", name, r.code, r.stderr)
		}
	}
	for _, out := range []string{exportOf(run, "atif"), filepath.Join(dir, "run-atif")} {
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a refused export wrote %s (%v)", out, err)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(full, "mine.txt")); string(b) != "keep" {
		t.Errorf("the user's file became %q", b)
	}
	broken := runfolder.EpisodeDir(run, runfolder.Episode{Task: "Scenario-902", Repeat: 1})
	os.Remove(filepath.Join(broken, runfolder.TrajectoryFile+".zst"))
	os.WriteFile(filepath.Join(broken, runfolder.TrajectoryFile), []byte(`{"kind":"turn","turn":"one"}`+"\n"), 0o644)
	r := aaGrade(t, nil, "export", run, "--format", "atif")
	r.wantExit(t, 1)
	textcheck.Has(t, "the export's stderr", r.stderr, filepath.Join(broken, runfolder.TrajectoryFile)+":1")
	if !textcheck.Has(t, "the export's stdout", r.stdout, "Exported 1 episode") || t.Failed() {
		t.FailNow()
	}
	if _, err := os.Stat(filepath.Join(exportOf(run, "atif"), "Scenario-901", "1", atif.File)); err != nil {
		t.Error(err)
	}
}

// atifSchema is the ATIF document's published schema, compiled.
func atifSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	return jsonschema.MustCompileFile(t, filepath.Join(moduleRoot, "harness", "vocab", "atif", "atif.schema.json"))
}

// TestExportOfALongEpisode: a long episode whose commands print pages of the snapshot (a
// trajectory of megabytes, summaries and the harness's messages on the way) exports to a valid
// document with a step per model call and every result read in its call's step.
func TestExportOfALongEpisode(t *testing.T) {
	schema := atifSchema(t)
	s := newScriptedRun(t, fakemodel.Script{Turns: 60, Command: "head -c 30000 otel_traces_raw.tsv 2>/dev/null || ls -laR", Answer: answer901}, "901", "1")
	run := filepath.Join(t.TempDir(), "run")
	if r := aaGrade(t, s.env, s.command(run)...); r.code != 0 {
		t.Fatalf("run: exit %d\n%s", r.code, r.stderr)
	}
	if r := aaGrade(t, nil, "export", run, "--format", "atif"); r.code != 0 {
		t.Fatalf("export: exit %d\n%s", r.code, r.stderr)
	}
	path := filepath.Join(exportOf(run, "atif"), "Scenario-901", "1", atif.File)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.Validate(b); err != nil {
		t.Fatal(err)
	}
	var doc atif.Trajectory
	json.Unmarshal(b, &doc)
	if err := atif.Check(&doc); err != nil {
		t.Fatal(err)
	}
	// The replies' prompt tokens pass 70% of the output cap, so the history is summarised on the
	// way: summary calls are agent steps too, and their calls are never run.
	agents, summaries, users, answered := 0, 0, 0, 0
	for _, s := range doc.Steps {
		switch {
		case s.Source == atif.SourceAgent && s.Extra["summary"] == true:
			summaries++
		case s.Source == atif.SourceAgent:
			agents++
			if s.Observation != nil && len(s.Observation.Results) == len(s.ToolCalls) {
				answered++
			}
		case s.Source == atif.SourceUser:
			users++
		}
	}
	calls := doc.FinalMetrics.Extra["model_calls"].(float64)
	if summaries == 0 {
		t.Errorf("no summary step")
	}
	if float64(agents+summaries) != calls {
		t.Errorf("%d agent steps and %d summaries for %v model calls", agents, summaries, calls)
	}
	if answered != agents-1 {
		t.Errorf("%d of %d agent steps with every result, want all but the last", answered, agents)
	}
	if users < 2*summaries {
		t.Errorf("%d user steps for %d summaries, want 2 a summary or more", users, summaries)
	}
	if len(b) < 1<<20 {
		t.Errorf("the document is %d bytes, want 1 MiB or more", len(b))
	}

}

// exportOf is where export writes a run's episodes in format when --out is not given.
func exportOf(run, format string) string {
	return filepath.Join(filepath.Dir(filepath.Dir(run)), filepath.Base(run)+"-"+format)
}

// TestDefaultExportLeavesTheFolderOfRuns: the export of a run named from inside its folder of
// runs goes beside that folder (../run-atif), not among the runs, where it would be refused.
func TestDefaultExportLeavesTheFolderOfRuns(t *testing.T) {
	dir := t.TempDir()
	runs := filepath.Join(dir, "runs")
	if err := os.MkdirAll(filepath.Join(runs, "opus"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	for run, want := range map[string]string{
		filepath.Join("runs", "opus"):       "opus-atif",
		filepath.Join(runs, "opus"):         "opus-atif",
		filepath.Join("runs", "opus") + "/": "opus-atif",
	} {
		if got := defaultExport(run, "atif"); got != want {
			t.Errorf("from %s, the export of %s goes to %s, want %s", dir, run, got, want)
		}
	}
	t.Chdir(runs)
	for run, want := range map[string]string{
		"opus":                              filepath.Join("..", "opus-atif"),
		filepath.Join("..", "runs", "opus"): filepath.Join("..", "opus-atif"),
	} {
		if got := defaultExport(run, "atif"); got != want {
			t.Errorf("from %s, the export of %s goes to %s, want %s", runs, run, got, want)
		}
	}
	t.Chdir(filepath.Join(runs, "opus"))
	if got, want := defaultExport(".", "atif"), filepath.Join("..", "..", "opus-atif"); got != want {
		t.Errorf("from the run folder itself, the export goes to %s, want %s", got, want)
	}
}
