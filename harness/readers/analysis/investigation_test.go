package analysis

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/episode/sandbox/wire"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// turn builds a turn record whose reply runs shell commands (ids c<turn>-<i>) and says text.
func turn(n int, tokens int64, results []model.Message, text string, cmds ...string) runfolder.TurnRecord {
	t := runfolder.TurnRecord{Kind: "turn", Turn: n, Input: results, Usage: model.Usage{Input: tokens, Output: 10}}
	t.Reply.Content = text
	for i, c := range cmds {
		args, _ := json.Marshal(map[string]string{"cmd": c})
		t.Reply.ToolCalls = append(t.Reply.ToolCalls, model.ToolCall{ID: callID(n, i), Name: "code_exec", Arguments: string(args)})
	}
	return t
}

func callID(turn, i int) string { return "c" + string(rune('0'+turn)) + "-" + string(rune('0'+i)) }

func result(turn, i int, content string) model.Message {
	return model.Message{Role: "tool", ToolCallID: callID(turn, i), Content: content}
}

// shellText is a shell result in the built-in set's words.
func shellText(code int, stdout, stderr string) string {
	return fmt.Sprintf("<shell_results>\n<exit_code>%d</exit_code>\n<stdout>%s</stdout>\n<stderr>%s</stderr>\n</shell_results>", code, stdout, stderr)
}

// truncated is an output cut to the sandbox's limit, its notice where the model reads it.
func truncated() string {
	c := wire.NewCapture(shellspec.OutputLimit)
	c.Write([]byte(strings.Repeat("log line\n", 10000)))
	return c.String()
}

var ok = shellText(0, "x", "")

// TestInvestigate: a scripted episode whose commands and replies are known.
func TestInvestigate(t *testing.T) {
	_, k := realKey(t, "scenario_2", nil)
	pandas := `python3 -c "import pandas as pd; print(pd.read_csv('otel_traces_raw.tsv', sep='\t').head())"`
	turns := []runfolder.TurnRecord{
		turn(1, 100, nil, "Let me look around.", "ls alerts | head -3", "cat k8s_events_raw.tsv | wc -l"),
		turn(2, 200, []model.Message{result(1, 0, ok), result(1, 1, ok)}, "", pandas),
		turn(3, 300, []model.Message{result(2, 0, shellText(1, "", "KeyError"))}, "", pandas),
		{Kind: "turn", Turn: 3, Summary: true, Reply: model.Message{Content: "the flagd-config ConfigMap is suspect"}, Usage: model.Usage{Input: 1000, Output: 50}},
		turn(4, 400, []model.Message{result(3, 0, shellText(0, truncated(), ""))},
			"", `grep -h flagd-config k8s_objects_raw.tsv | jq .`, "timeout 5 grep -c Error otel_logs_raw.tsv metrics/pod_cart_raw.tsv"),
		turn(5, 500, []model.Message{result(4, 0, "<shell_results>\n<error_kind>timeout</error_kind>\n<details>the command did not finish within 300 seconds and was killed with its process group</details>\n</shell_results>"), result(4, 1, ok)},
			"", "cat > agent_output.json <<'EOF'\n{}\nEOF"),
	}
	inv := Investigate(turns, k, nil)
	if inv.FirstHitTurn == nil || *inv.FirstHitTurn != 4 {
		t.Fatalf("first hit turn %v, want 4 (the summary call is no turn)", inv.FirstHitTurn)
	}
	if want := int64(100 + 200 + 300 + 1000 + 400 + 4*10 + 50); *inv.FirstHitTokens != want {
		t.Errorf("tokens until the first hit %d, want %d", *inv.FirstHitTokens, want)
	}
	if want := []string{"alerts", "events", "traces", "objects", "logs", "metrics"}; !slices.Equal(inv.SourcesRead, want) {
		t.Errorf("sources %v, want %v", inv.SourcesRead, want)
	}
	wantKinds := map[string]int{"listing": 1, "read": 1, "python": 2, "jq": 1, "grep_awk_sed": 1, "answer": 1}
	if len(inv.Commands) != len(wantKinds) {
		t.Errorf("commands %v, want %v", inv.Commands, wantKinds)
	}
	for kind, n := range wantKinds {
		if inv.Commands[kind] != n {
			t.Errorf("commands %v, want %v", inv.Commands, wantKinds)
		}
	}
	for _, c := range []struct {
		name      string
		got, want int
	}{{"failed", inv.Failed, 2}, {"truncated", inv.Truncated, 1}, {"repeated", inv.Repeated, 1}, {"turns", inv.Turns, 5}} {
		if c.got != c.want {
			t.Errorf("%s %d, want %d", c.name, c.got, c.want)
		}
	}
}

// TestNoHit: an episode that never names a root cause has no first hit.
func TestNoHit(t *testing.T) {
	_, k := realKey(t, "scenario_2", nil)
	inv := Investigate([]runfolder.TurnRecord{turn(1, 10, nil, "cart fails", "grep cart otel_logs_raw.tsv")}, k, nil)
	if inv.FirstHitTurn != nil {
		t.Errorf("first hit at turn %d, want none", *inv.FirstHitTurn)
	}
	if inv.FirstHitTokens != nil {
		t.Errorf("first hit after %d tokens, want none", *inv.FirstHitTokens)
	}
	inv = Investigate(nil, k, nil)
	if inv.Turns != 0 {
		t.Errorf("an empty trajectory gives %d turns", inv.Turns)
	}
	if inv.FirstHitTurn != nil {
		t.Errorf("an empty trajectory gives a first hit at turn %d", *inv.FirstHitTurn)
	}
	if len(inv.Commands) != 0 {
		t.Errorf("an empty trajectory gives commands %v", inv.Commands)
	}
}

func TestCommandKind(t *testing.T) {
	for cmd, want := range map[string]string{
		"ls -la":                                  "listing",
		"find . -name '*.tsv' | head":             "listing",
		"head -5 k8s_events_raw.tsv":              "read",
		"FOO=1 sudo grep -c x f | sort | uniq -c": "grep_awk_sed",
		"awk -F'\\t' '{print $8}' f":              "grep_awk_sed",
		"jq '.[] | .labels' alerts/a.json":        "jq",
		"cat f | python3 -c 'import sys'":         "python",
		"/usr/bin/python3 script.py":              "python",
		"echo hi":                                 "other",
		"cat agent_output.json":                   "answer",
		"$(ls) && echo done":                      "listing",
	} {
		if got := commandKind(cmd); got != want {
			t.Errorf("%q: %s, want %s", cmd, got, want)
		}
	}
}

// TestDemoTopology reads the call topology from the demo dataset's traces, and the fault
// graph of its task 901 follows it to a service no propagation names.
func TestDemoTopology(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	ds, err := data.Open(context.Background(), data.DemoSpec, data.OpenOptions{Tasks: []string{"Scenario-901"}})
	if err != nil {
		t.Fatal(err)
	}
	task := ds.Tasks[0]
	topo, err := ReadTopology(task.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, call := range [][2]string{{"frontend", "product-catalog"}, {"frontend-proxy", "frontend"}, {"checkout", "product-catalog"}} {
		if !slices.Contains(topo.Calls, call) {
			t.Errorf("no call %v in %v", call, topo.Calls)
		}
	}
	if slices.ContainsFunc(topo.Calls, func(c [2]string) bool { return c[0] == c[1] }) {
		t.Error("a service calls itself")
	}
	// Add a group the propagations leave out: with the traces, it is one call from frontend.
	doc := strings.Replace(string(task.GroundTruth), "\nmetadata:", "\n  - id: checkout-service-1\n    kind: Service\n    namespace: otel-demo\n    filter:\n      - 'checkout\\b'\nmetadata:", 1) // the end of groups
	if doc == string(task.GroundTruth) {
		t.Fatal("the ground truth has no metadata after its groups")
	}
	gt, err := grader.ParseGroundTruth([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"otel-demo/Service/checkout"}
	if a := NewKey(gt, nil).Assess(gt.Score(names).Predictions); a.PartialCredit != 0 {
		t.Errorf("without the traces checkout earns %v", a.PartialCredit)
	}
	// flagd-config -> product-catalog -> checkout (which calls it): 2 steps, 1/4 towards the
	// one root cause.
	if a := NewKey(gt, topo).Assess(gt.Score(names).Predictions); a.PartialCredit != 0.25*0.25 {
		t.Errorf("with the traces checkout earns %v, want %v", a.PartialCredit, 0.25*0.25)
	}
	if topo, err := ReadTopology(t.TempDir()); topo != nil || err != nil {
		t.Errorf("a snapshot without traces: %v, %v", topo, err)
	}
}

// TestReadTurnsOfAWrittenTrajectory: the compressed file a run leaves is read, wire events
// (one longer than any turn) skipped, and a last line cut short by a crash left out.
func TestReadTurnsOfAWrittenTrajectory(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.Encode(map[string]any{"kind": "request", "body": map[string]string{"x": strings.Repeat("y", 200<<10)}})
	enc.Encode(turn(1, 10, nil, "", "ls"))
	enc.Encode(turn(2, 10, nil, "", "ls alerts"))
	b.WriteString(`{"kind":"turn","turn":3,"inp`)
	f, err := os.Create(filepath.Join(dir, runfolder.TrajectoryFile+".zst"))
	if err != nil {
		t.Fatal(err)
	}
	zw, _ := zstd.NewWriter(f)
	zw.Write([]byte(b.String()))
	zw.Close()
	f.Close()
	turns, err := runfolder.ReadTurns(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 {
		t.Fatalf("read %d turns, want 2", len(turns))
	}
	if turns[1].Turn != 2 {
		t.Fatalf("the second turn read is numbered %d", turns[1].Turn)
	}

	if err := os.WriteFile(filepath.Join(dir, runfolder.TrajectoryFile+".zst"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(dir, runfolder.TrajectoryFile+".zst"))
	if err := os.WriteFile(filepath.Join(dir, runfolder.TrajectoryFile), []byte("{\"kind\":\"turn\",\"turn\":\"one\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := runfolder.ReadTurns(dir); err == nil || !strings.Contains(err.Error(), runfolder.TrajectoryFile+":1") {
		t.Errorf("a broken turn line: %v, want an error naming the file and line", err)
	}
}

// TestSourcesOf: a source counts when a command names its files or folder, not when a
// comment or a word of prose mentions it.
func TestSourcesOf(t *testing.T) {
	for cmd, want := range map[string][]string{
		"ls alerts | head -3":                                           {"alerts"},
		"cat alerts/alerts_at_2025-12-15T17-30-49.json":                 {"alerts"},
		"jq . alerts_in_alerting_state_x.json":                          {"alerts"},
		"ls metrics":                                                    {"metrics"},
		"head -2 metrics/pod_cart_raw.tsv":                              {"metrics"},
		`python3 -c "import glob; print(glob.glob('metrics/*'))"`:       {"metrics"},
		"grep -c ERROR otel_logs_raw.tsv # then the metrics and alerts": {"logs"},
		"python3 - <<'EOF'\n# reads alerts, metrics and logs\nimport os\nprint(os.listdir('.'))\nEOF": {},
		"grep -c alertsFiring k8s_objects_raw.tsv":                                                    {"objects"},
		"grep cart otel_traces_raw.tsv otel_logs_raw.tsv":                                             {"traces", "logs"},
	} {
		if got := sourcesOf(cmd); !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
			t.Errorf("sourcesOf(%q) = %v, want %v", cmd, got, want)
		}
	}
}
