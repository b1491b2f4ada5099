package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/internal/testsupport/testfs"
	"github.com/aa-grade/aa-grade/internal/testsupport/textcheck"
)

// harborTrial writes a Harbor trial folder of task whose agent's last message is answer.
func harborTrial(t *testing.T, job, trial, task, started, answer string) {
	t.Helper()
	doc := atif.Trajectory{SchemaVersion: "ATIF-v1.6", SessionID: trial, Agent: atif.Agent{Name: "terminus-2", Version: "2.0.0"},
		Steps: []atif.Step{{StepID: 1, Source: atif.SourceUser, Message: "Diagnose the incident."},
			{StepID: 2, Source: atif.SourceAgent, Message: atif.Text(answer)}}}
	b, _ := json.Marshal(doc)
	result, _ := json.Marshal(map[string]string{"task_name": task, "trial_name": trial, "started_at": started})
	for name, body := range map[string][]byte{filepath.Join("agent", atif.File): b, "result.json": result} {
		path := filepath.Join(job, trial, name)
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestGradeHarborJob: grade and analyze take a Harbor job's trajectories as submissions,
// each task's trials its repeats in the order they started, naming a trial that maps to no
// task, and the trajectory and step of an answer that is no diagnosis; grade scores the tasks
// the job covers, saying how many of the dataset's that is (--all-tasks: all of them,
// --tasks: those asked for, an unknown one refused naming the dataset's); answers for none of
// the dataset's tasks, and a job none of whose trajectories answers, are refused, saying why.
func TestGradeHarborJob(t *testing.T) {
	job := t.TempDir()
	right := `{"contributing_factors": [{"name": "otel-demo/ConfigMap/flagd-config"}]}`
	harborTrial(t, job, "s901__b", "Scenario-901", "2026-11-27T10:00:00Z", "The cause:\n```json\n"+right+"\n```")
	harborTrial(t, job, "s901__a", "Scenario-901", "2026-11-27T09:00:00Z", `{"contributing_factors": []}`)
	harborTrial(t, job, "lost__c", "", "2026-11-27T09:00:00Z", right)
	harborTrial(t, job, "s902__x", "Scenario-902", "2026-11-27T09:00:00Z", "I think it is {broken")
	r := aaGrade(t, nil, "grade", "--json", "--dataset", "demo", job)
	r.wantExit(t, 0)
	if !textcheck.Has(t, "grade's stderr", r.stderr, "lost__c", "names no task",
		"the answers cover 2 of the 12 tasks of demo: graded over those 2 (--all-tasks grades the other 10 as missing)") {
		t.FailNow()
	}
	if tasks := gjson.Get(r.stdout, "tasks").Int(); tasks != 2 {
		t.Errorf("graded over %d tasks, want the 2 the job covers", tasks)
	}
	reason := gjson.Get(r.stdout, `per_task.#(task=="Scenario-902").episodes.0.reason`).String()
	if !strings.HasPrefix(reason, filepath.Join(job, "s902__x", "agent", atif.File)+" (step 2, the agent's message): invalid submission") {
		t.Errorf("an invalid answer's reason: %q", reason)
	}
	scores := gjson.Get(r.stdout, `per_task.#(task=="Scenario-901").episodes.#.score`).Raw
	if scores != "[0,1]" {
		t.Errorf("Scenario-901's repeats scored %s, want [0,1] (the earlier trial first)", scores)
	}
	if r := aaGrade(t, nil, "analyze", "--json", "--dataset", "demo", job); r.code != 0 || gjson.Get(r.stdout, "0.summary.episodes").Int() != 24 {
		t.Errorf("analyze: exit %d\n%.400s\n%s", r.code, r.stdout, r.stderr)
	}
	for _, c := range []struct {
		flags []string
		tasks int64
	}{{[]string{"--all-tasks"}, 12}, {[]string{"--tasks", "901,903"}, 2}} {
		r := aaGrade(t, nil, append(append([]string{"grade", "--json", "--dataset", "demo"}, c.flags...), job)...)
		r.wantExit(t, 0)
		if tasks := gjson.Get(r.stdout, "tasks").Int(); tasks != c.tasks {
			t.Errorf("%s: graded over %d tasks, want %d", c.flags, tasks, c.tasks)
		}
		textcheck.Lacks(t, "stderr with "+c.flags[0], r.stderr, "the answers cover")
	}
	r = aaGrade(t, nil, "grade", "--dataset", "demo", "--tasks", "999", job)
	r.checkExit(t, 2)
	textcheck.Has(t, "stderr of --tasks 999", r.stderr, "--tasks: demo: no such task: 999 (its tasks: 901-912)")
	other := t.TempDir()
	testfs.Write(t, filepath.Join(other, "Scenario-1", "ground_truth.yaml"), "groups:\n  - {id: a, kind: Pod, filter: [a], root_cause: true}\n")
	r = aaGrade(t, nil, "grade", "--dataset", other, job)
	r.checkExit(t, 2)
	textcheck.Has(t, "stderr of answers for another dataset", r.stderr, "are for none of the", "(--dataset)")
	r = aaGrade(t, nil, "grade", "--dataset", filepath.Join(other, "absent"), job)
	r.checkExit(t, 2)
	textcheck.Has(t, "stderr of a missing dataset folder", r.stderr, "absent: not a dataset: no such folder")
	textcheck.Lacks(t, "stderr of a missing dataset folder", r.stderr, "stat ")
	silent := t.TempDir()
	harborTrial(t, silent, "s901__a", "Scenario-901", "", "")
	r = aaGrade(t, nil, "grade", "--dataset", "demo", silent)
	r.checkExit(t, 2)
	textcheck.Has(t, "stderr of a job with no answer", r.stderr, "no answer in the ATIF trajectories", "no agent message")
}
