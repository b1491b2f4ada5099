package viewer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/settings"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
)

// hostileTask is a task id made to break a page: markup, a script, a terminal sequence, a
// path out of the folder.
const hostileTask = "../<img src=http://192.0.2.1/t.png onerror=alert(1)>\x1b[31m"

// hostile is text a model or its commands could produce to break a page or a terminal.
const hostile = "</pre><script>alert('x')</script><img src=\"http://192.0.2.1/p.png\">\x1b[2J\x1b]0;owned\x07\u202e"

// groundTruth901 is the ground truth of the fixture's Scenario-901.
func groundTruth901(t testing.TB) map[string][]byte {
	b, err := os.ReadFile("../../../testdata/grade/dataset/sre/Scenario-901/ground_truth.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return map[string][]byte{"Scenario-901": b}
}

// episodeSpec says what one fixture episode holds.
type episodeSpec struct {
	task     string
	repeat   int
	turns    int
	output   int  // characters each command prints; above shellspec.OutputLimit the model sees it cut
	finished bool // compressed, with a result line and a submission
	// old: written before trajectories kept the last turn's results, which a finished
	// episode's now ends with
	old       bool
	retries   int // retried attempts before the first call
	submitted []string
}

// writeRun writes a run folder as aa-grade run leaves it: run.json, results.jsonl, and each
// episode's trajectory (wire events with whole raw bodies, turn records) and submission.
func writeRun(t testing.TB, dir string, tasks []string, repeats int, episodes ...episodeSpec) {
	t.Helper()
	h := runfolder.Header{Version: "test", Dataset: "test-dataset", Tasks: tasks, Repeats: repeats,
		Model: "anthropic/claude-opus-4-7", Sandbox: "bwrap", Prices: &model.Prices{Input: 5, Output: 25},
		Started:  time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC),
		Settings: settings.Settings{MaxTurns: 100, CommandTimeout: settings.Duration(5 * time.Minute)}}
	b, _ := json.Marshal(h)
	testfs.Write(t, filepath.Join(dir, runfolder.HeaderFile), string(b))
	var results strings.Builder
	for _, e := range episodes {
		epDir := runfolder.EpisodeDir(dir, runfolder.Episode{Task: e.task, Repeat: e.repeat})
		writeTrajectory(t, epDir, e)
		if !e.finished {
			continue
		}
		sub, _ := json.Marshal(map[string]any{"contributing_factors": factors(e.submitted)})
		testfs.Write(t, filepath.Join(epDir, grader.SubmissionFile), string(sub))
		cost := 1.25
		r := runfolder.Result{Task: e.task, Repeat: e.repeat, Status: "ok", Score: 0.5, TP: 1, FP: 1, RootCauses: 1, RootCausesFound: 1,
			Turns: e.turns, ToolCalls: e.turns, Tokens: model.Usage{Input: 120000, CachedRead: 90000, Output: 8000, Reasoning: 5000},
			CostUSD: &cost, Duration: 321, ModelTime: 250, ToolTime: 60, Retries: e.retries, Matcher: "rules"}
		line, _ := json.Marshal(r)
		results.Write(append(line, '\n'))
	}
	testfs.Write(t, filepath.Join(dir, runfolder.ResultsFile), results.String())
}

func factors(names []string) []map[string]string {
	out := []map[string]string{}
	for _, n := range names {
		out = append(out, map[string]string{"name": n, "reasoning": "its failure explains the alerts", "evidence": "k8s_events_raw.tsv"})
	}
	return out
}

// shellResult words a command's result as the built-in prompt set does, its output kept as
// the sandbox keeps it (cut to OutputLimit with the notice in the middle).
func shellResult(code int, stdout, stderr string) string {
	keep := func(s string) string {
		c := wire.NewCapture(shellspec.OutputLimit)
		c.Write([]byte(s))
		return c.String()
	}
	return fmt.Sprintf("<shell_results>\n<exit_code>%d</exit_code>\n<stdout>%s</stdout>\n<stderr>%s</stderr>\n</shell_results>", code, keep(stdout), keep(stderr))
}

// output is n characters of plausible command output, lines of a TSV.
func output(turn, n int) string {
	var b strings.Builder
	for i := 0; b.Len() < n; i++ {
		fmt.Fprintf(&b, "2026-05-01T08:%02d:%02dZ\totel-demo\tcart-7d9f8b6c5-x2k4q\tWarning\tBackOff\tturn %d row %d: restarting failed container\n", i/60%60, i%60, turn, i)
	}
	return b.String()[:n]
}

func writeTrajectory(t testing.TB, dir string, e episodeSpec) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(dir, runfolder.TrajectoryFile))
	if err != nil {
		t.Fatal(err)
	}
	enc := json.NewEncoder(f)
	at := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	conversation := []model.Message{{Role: model.RoleSystem, Content: "You are an expert SRE."},
		{Role: model.RoleUser, Content: "An incident happened in a Kubernetes cluster. " + hostile}}
	var input []model.Message = conversation
	for n := 1; n <= e.turns; n++ {
		if left := 100 - n + 1; left <= 20 {
			warn := model.Message{Role: model.RoleUser, Content: fmt.Sprintf("You have %d turns left, this one included.", left)}
			input = append(input, warn)
			conversation = append(conversation, warn)
		}
		body, _ := json.Marshal(map[string]any{"model": "claude-opus-4-7", "messages": conversation})
		enc.Encode(model.Event{Kind: "request", URL: "https://api.anthropic.com/v1/messages", Header: map[string]string{"X-Api-Key": "[REDACTED]"}, Body: body})
		if n == 1 {
			for a := 1; a <= e.retries; a++ {
				enc.Encode(model.Event{Kind: "response", Status: 529, Body: json.RawMessage(`{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`)})
				enc.Encode(model.Event{Kind: "retry", Attempt: a, Wait: 2 * time.Second, Error: "529 overloaded_error: Overloaded"})
				enc.Encode(model.Event{Kind: "request", URL: "https://api.anthropic.com/v1/messages", Body: body})
			}
		}
		cmd := fmt.Sprintf("grep -n 'BackOff' k8s_events_raw.tsv | head -n %d", n)
		code, stderr := 0, ""
		switch {
		case n == 2:
			cmd = "printf '" + hostile + "'; echo " + hostile
			code, stderr = 1, "bash: "+hostile
		case n%7 == 0:
			cmd = "python3 -c 'import pandas as pd\nprint(pd.read_csv(\"missing.tsv\", sep=\"\\t\"))'"
			code, stderr = 1, "FileNotFoundError: [Errno 2] No such file or directory: 'missing.tsv'"
		}
		thinking := fmt.Sprintf("Turn %d: the alerts point at cart; the events should say why its pods restart. %s", n, hostile)
		blocks := []map[string]any{{"type": "thinking", "thinking": thinking, "signature": "c2ln"},
			{"type": "text", "text": fmt.Sprintf("Looking at the events (step %d).", n)}}
		call := model.ToolCall{ID: fmt.Sprintf("toolu_%03d", n), Name: "code_exec"}
		if n == e.turns && e.finished {
			call = model.ToolCall{ID: "toolu_finish", Name: "finish", Arguments: `{"reason":"written","paths":["agent_output.json"]}`}
		} else {
			args, _ := json.Marshal(map[string]string{"cmd": cmd})
			call.Arguments = string(args)
		}
		blocks = append(blocks, map[string]any{"type": "tool_use", "id": call.ID, "name": call.Name, "input": json.RawMessage(call.Arguments)})
		opaque, _ := json.Marshal(blocks)
		answer, _ := json.Marshal(map[string]any{"content": json.RawMessage(opaque), "usage": map[string]int{"input_tokens": 900, "output_tokens": 400}})
		enc.Encode(model.Event{Kind: "response", Status: 200, Body: answer})
		reply := model.Message{Role: model.RoleAssistant, Content: fmt.Sprintf("Looking at the events (step %d).", n), ToolCalls: []model.ToolCall{call}, Opaque: opaque}
		at = at.Add(7 * time.Second)
		enc.Encode(runfolder.TurnRecord{Kind: "turn", Turn: n, At: at, Input: input, Reply: reply,
			Usage: model.Usage{Input: int64(1200 * n), CachedRead: int64(1000 * n), Output: 400, Reasoning: 250}})
		result := model.Message{Role: model.RoleTool, ToolCallID: call.ID, Content: shellResult(code, output(n, e.output), stderr)}
		if n == e.turns && e.finished {
			result.Content = "Submitted agent_output.json."
		}
		conversation = append(conversation, reply, result)
		input = []model.Message{result}
	}
	if e.finished && !e.old {
		enc.Encode(runfolder.UnsentRecord{Kind: model.KindUnsent, Turn: e.turns, At: at, Messages: input})
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if e.finished {
		if err := runfolder.CompressTrajectory(dir); err != nil {
			t.Fatal(err)
		}
	}
}
