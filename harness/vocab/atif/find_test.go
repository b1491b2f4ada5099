package atif

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// doc is an ATIF document of a shell agent: a prompt, then one agent step a reply, with a
// call and its result when cmd is given.
func doc(t *testing.T, replies ...[2]string) []byte {
	t.Helper()
	tr := Trajectory{SchemaVersion: "ATIF-v1.6", SessionID: "s", Agent: Agent{Name: "terminus-2", Version: "2.0.0"},
		Steps: []Step{{StepID: 1, Source: SourceUser, Message: "Find the root cause."}}}
	for i, r := range replies {
		s := Step{StepID: len(tr.Steps) + 1, Source: SourceAgent, Message: Text(r[0])}
		if r[1] != "" {
			id := "call_" + string(rune('a'+i))
			args, _ := json.Marshal(map[string]string{"command": "cat " + grader.SubmissionFile})
			out := Text(r[1])
			s.ToolCalls = []ToolCall{{ToolCallID: id, FunctionName: "bash", Arguments: args}}
			s.Observation = &Observation{Results: []ObservationResult{{SourceCallID: id, Content: &out}}}
		}
		tr.Steps = append(tr.Steps, s)
	}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func write(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const answer = `{"contributing_factors": [{"name": "otel-demo/ConfigMap/flagd-config"}]}`

// TestDiagnosis: the answer file read back wins over the last message; a message whose JSON
// is wrapped in prose is read; a trajectory with neither has none.
func TestDiagnosis(t *testing.T) {
	for name, c := range map[string]struct {
		replies [][2]string
		want    string // "" for no answer
	}{
		"answer file read back":          {[][2]string{{"", answer}, {"Done: see the file.", ""}}, "flagd-config"},
		"fenced answer in the message":   {[][2]string{{"", "ls output"}, {"Root cause:\n```json\n" + answer + "\n```", ""}}, "flagd-config"},
		"the file is no diagnosis":       {[][2]string{{"", `{"oops": 1}`}, {answer, ""}}, "flagd-config"},
		"nothing to read":                {[][2]string{{"", "ls output"}, {"", ""}}, ""},
		"a message that is no diagnosis": {[][2]string{{"I could not finish.", ""}}, "I could not finish."},
	} {
		t.Run(name, func(t *testing.T) {
			var tr Trajectory
			if err := json.Unmarshal(doc(t, c.replies...), &tr); err != nil {
				t.Fatal(err)
			}
			got, where, ok := Diagnosis(&tr)
			if ok != (c.want != "") || !strings.Contains(string(got), c.want) {
				t.Errorf("%q at %q (%v), want %q", got, where, ok, c.want)
			}
		})
	}
}

// TestFindHarborJob: a Harbor job's trials are mapped to their tasks (result.json, else
// config.json) and numbered by start; a trial naming no task, or a path for one, is a problem
// naming it; the answers are written out as submissions, and a trajectory with none is a
// problem.
func TestFindHarborJob(t *testing.T) {
	job := t.TempDir()
	trial := func(name, result, config string, trajectory []byte) {
		if result != "" {
			write(t, filepath.Join(job, name, "result.json"), []byte(result))
		}
		if config != "" {
			write(t, filepath.Join(job, name, "config.json"), []byte(config))
		}
		write(t, filepath.Join(job, name, "agent", File), trajectory)
	}
	trial("scenario-2__late", `{"task_name": "Scenario-2", "started_at": "2026-11-27T10:00:00Z"}`, "", doc(t, [2]string{answer, ""}))
	trial("scenario-2__early", `{"task_name": "Scenario-2", "started_at": "2026-11-27T09:00:00Z"}`, "", doc(t, [2]string{"[]", ""}))
	trial("scenario-3__a", "", `{"task": {"path": "datasets/itbench/Scenario-3"}}`, doc(t, [2]string{"", ""}))
	trial("nameless", `{"trial_name": "nameless"}`, "", doc(t))
	trial("escape", `{"task_name": "../../etc"}`, "", doc(t))
	found, err := Find(job)
	if err != nil {
		t.Fatal(err)
	}
	wantFound(t, found, LayoutHarbor, 3, 2)
	got := map[string]string{}
	for _, e := range found.Episodes {
		got[e.Task+"/"+string(rune('0'+e.Repeat))] = filepath.Base(filepath.Dir(filepath.Dir(e.Path)))
	}
	for episode, trial := range map[string]string{"Scenario-2/1": "scenario-2__early", "Scenario-2/2": "scenario-2__late", "Scenario-3/1": "scenario-3__a"} {
		if got[episode] != trial {
			t.Errorf("episode %s from %q, want the trial %s (all: %v)", episode, got[episode], trial, got)
		}
	}
	if !strings.Contains(strings.Join(found.Problems, "\n"), "nameless") || !strings.Contains(strings.Join(found.Problems, "\n"), `"../../etc" is not a task id`) {
		t.Errorf("problems %q", found.Problems)
	}
	out := t.TempDir()
	sources, problems, err := WriteSubmissions(found, out)
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 || !strings.Contains(problems[0], "scenario-3__a") {
		t.Errorf("problems %q", problems)
	}
	late := filepath.Join(job, "scenario-2__late", "agent", File) + " (step 2, the agent's message)"
	if src := sources[filepath.Join(out, "Scenario-2", "2.json")]; src != late {
		t.Errorf("the source of Scenario-2/2 is %q, want %q", src, late)
	}
	subs, _, err := grader.FindSubmissions(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(subs["Scenario-2"]); n != 2 {
		t.Errorf("%d submissions of Scenario-2, want 2: %v", n, subs)
	}
	if s := subs["Scenario-3"]; s != nil {
		t.Errorf("submissions of Scenario-3 %v, want none", s)
	}
}

// wantFound checks what Find found, each part its own failure, and stops the test when one
// is wrong.
func wantFound(t *testing.T, found Found, layout string, episodes, problems int) {
	t.Helper()
	if found.Layout != layout {
		t.Errorf("layout %s, want %s", found.Layout, layout)
	}
	if len(found.Episodes) != episodes {
		t.Errorf("%d episodes, want %d", len(found.Episodes), episodes)
	}
	if len(found.Problems) != problems {
		t.Errorf("problems %q, want %d", found.Problems, problems)
	}
	if t.Failed() {
		t.Fatalf("%+v", found)
	}
}

// TestFindExportLayout: aa-grade's own layout, TASK/REPEAT/trajectory.json, with a folder that
// is not a repeat named; a file that is not ATIF cannot be read.
func TestFindExportLayout(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Scenario-2", "1", File), doc(t, [2]string{answer, ""}))
	write(t, filepath.Join(dir, "Scenario-2", "first", File), doc(t))
	write(t, filepath.Join(dir, "Scenario-3", "1", File), []byte(`{"schema_version": "1.0", "steps": []}`))
	found, err := Find(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantFound(t, found, LayoutEpisodes, 2, 1)
	if !textcheck.Has(t, "the problem", found.Problems[0], "first") {
		t.FailNow()
	}
	_, problems, err := WriteSubmissions(found, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 1 {
		t.Fatalf("problems %q, want one", problems)
	}
	textcheck.Has(t, "the problem", problems[0], "not an ATIF document")

	if found, err := Find(t.TempDir()); err != nil || len(found.Episodes) != 0 {
		t.Errorf("an empty folder: %+v, %v", found, err)
	}
}
