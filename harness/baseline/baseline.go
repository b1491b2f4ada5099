// Package baseline is builtin/baseline: a rule-based investigator behind the model interface.
// It surveys the snapshot through the same shell tool a model uses (a Python script over the
// object dumps and events: network policies, chaos objects, quotas, autoscalers, image and
// memory failures, changed ConfigMaps and pod templates), decides with fixed rules, writes
// agent_output.json and finishes. It gives every user a free reference row and exercises the
// whole loop offline.
package baseline

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/aa-grade/aa-grade/harness"
	"github.com/aa-grade/aa-grade/harness/model"
)

//go:embed survey.py
var survey string

// Tool call ids that tell the baseline which step a conversation is at.
const (
	surveyCall = "baseline-survey"
	writeCall  = "baseline-write"
	finishCall = "baseline-finish"
)

// rule is one kind of evidence, strongest first: the first that found something decides.
type rule struct {
	fact, why string
}

var rules = []rule{
	{"chaos", "a chaos-mesh experiment acts on the application"},
	{"quota_full", "a ResourceQuota is exhausted and refuses new pods"},
	{"netpol_deny", "a NetworkPolicy denies all ingress to the pods it selects"},
	{"hpa_capped", "a HorizontalPodAutoscaler caps its target at one replica"},
	{"image_pull", "the workload's pods cannot pull their image"},
	{"oom", "the workload's containers are OOM-killed"},
	{"configmap_changed", "the ConfigMap's data changed during the incident"},
	{"template_changed", "the workload's pod template changed during the incident"},
}

// Model is the baseline; it keeps no state between calls, so one value serves any number of
// episodes at once.
type Model struct{}

// Complete answers from where the conversation stands.
func (Model) Complete(_ context.Context, req model.Request) (model.Reply, error) {
	if req.Summary {
		return model.Reply{Message: model.Message{Content: "The baseline keeps no notes."}}, nil
	}
	if len(req.Tools) < 2 {
		return model.Reply{Message: model.Message{Content: "The baseline needs the shell and finish tools."}}, nil
	}
	shellTool, finishTool := req.Tools[0].Name, req.Tools[1].Name
	last := lastAssistant(req.Messages)
	switch {
	case last == nil:
		return call(surveyCall, shellTool, map[string]string{"cmd": "python3 - <<'EOF'\n" + survey + "EOF"}), nil
	case hasCall(last, surveyCall):
		facts, err := parseSurvey(toolResult(req.Messages, surveyCall))
		if err != nil {
			return model.Reply{Message: model.Message{Content: "The survey failed: " + err.Error()}}, nil
		}
		doc := diagnose(facts)
		write := call(writeCall, shellTool, map[string]string{"cmd": "cat > " + harness.SubmissionFile + " <<'EOF'\n" + doc + "\nEOF"})
		finish := call(finishCall, finishTool, map[string]any{"reason": "diagnosis written", "paths": []string{harness.SubmissionFile}})
		write.Message.ToolCalls = append(write.Message.ToolCalls, finish.Message.ToolCalls...)
		return write, nil
	}
	return model.Reply{Message: model.Message{Content: "The baseline has nothing more to try."}}, nil
}

func call(id, tool string, args any) model.Reply {
	b, _ := json.Marshal(args)
	return model.Reply{Message: model.Message{ToolCalls: []model.ToolCall{{ID: id, Name: tool, Arguments: string(b)}}}}
}

func lastAssistant(messages []model.Message) *model.Message {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == model.RoleAssistant {
			return &messages[i]
		}
	}
	return nil
}

func hasCall(m *model.Message, id string) bool {
	for _, c := range m.ToolCalls {
		if c.ID == id {
			return true
		}
	}
	return false
}

func toolResult(messages []model.Message, id string) string {
	for i := len(messages) - 1; i >= 0; i-- {
		if messages[i].Role == model.RoleTool && messages[i].ToolCallID == id {
			return messages[i].Content
		}
	}
	return ""
}

// parseSurvey reads the survey's JSON from the stdout of its shell result.
func parseSurvey(result string) (map[string][]string, error) {
	_, rest, ok := strings.Cut(result, "<stdout>")
	out, _, ok2 := strings.Cut(rest, "</stdout>")
	if !ok || !ok2 {
		return nil, fmt.Errorf("no output: %.300s", result)
	}
	var facts map[string][]string
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &facts); err != nil {
		return nil, fmt.Errorf("unreadable output: %v: %.300s", err, out)
	}
	return facts, nil
}

// diagnose applies the rules: the entities of the strongest kind of evidence found.
func diagnose(facts map[string][]string) string {
	type factor struct {
		Name      string `json:"name"`
		Reasoning string `json:"reasoning"`
		Evidence  string `json:"evidence"`
	}
	out := struct {
		ContributingFactors []factor `json:"contributing_factors"`
	}{ContributingFactors: []factor{}}
	for _, r := range rules {
		for _, e := range facts[r.fact] {
			out.ContributingFactors = append(out.ContributingFactors, factor{Name: e, Reasoning: r.why,
				Evidence: "baseline survey of k8s_objects_raw.tsv and k8s_events_raw.tsv: " + r.fact})
		}
		if len(out.ContributingFactors) > 0 {
			break
		}
	}
	b, _ := json.Marshal(out)
	return string(b)
}
