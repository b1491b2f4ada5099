// Package baseline is builtin/baseline: a fault-agnostic investigator behind the model
// interface. It runs one investigation through the same shell tool a model uses (a Python
// script, standard library only, over alerts, events, object dumps, logs, traces and
// metrics), ranks the cluster's changes by how they relate to the services where the failure
// starts, writes agent_output.json with the best-supported ones and finishes. It knows no
// fault list: it gives every user a free reference row and exercises the whole loop offline.
// This file is the only one that speaks the model interface's types.
package baseline

import (
	"context"
	_ "embed"
	"encoding/json"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
)

//go:embed investigate.py
var investigation string

// InvestigationCommand runs the script in the sandbox's shell; with string hashing fixed, its
// output is the same from one run to the next, so a replay follows the recording.
var InvestigationCommand = "PYTHONHASHSEED=0 python3 - <<'EOF'\n" + investigation + "EOF"

// Tool call ids that tell the baseline which step a conversation is at.
const (
	investigateCall = "baseline-investigate"
	writeCall       = "baseline-write"
	finishCall      = "baseline-finish"
)

// Model is the baseline; it keeps no state between calls, so one value serves any number of
// episodes at once.
type Model struct{}

// Complete answers from where the conversation stands.
func (Model) Complete(_ context.Context, req model.Request) (model.Reply, error) {
	if req.Summary {
		return says("The baseline keeps no notes."), nil
	}
	if len(req.Tools) < 2 {
		return says("The baseline needs the shell and finish tools."), nil
	}
	shellTool, finishTool := toolNames(req.Tools)
	last := lastAssistant(req.Messages)
	switch {
	case last == nil:
		return call(investigateCall, shellTool, map[string]string{"cmd": InvestigationCommand}), nil
	case hasCall(last, investigateCall):
		f, err := parseFinding(toolResult(req.Messages, investigateCall))
		if err != nil {
			return says("The investigation failed: " + err.Error()), nil
		}
		doc := diagnosis(f.answer())
		write := call(writeCall, shellTool,
			map[string]string{"cmd": "cat > " + grader.SubmissionFile + " <<'EOF'\n" + doc + "\nEOF"})
		finish := call(finishCall, finishTool,
			map[string]any{"reason": "diagnosis written", "paths": []string{grader.SubmissionFile}})
		write.Message.ToolCalls = append(write.Message.ToolCalls, finish.Message.ToolCalls...)
		return write, nil
	}
	return says("The baseline has nothing more to try."), nil
}

// toolNames tells the shell tool (the one whose schema has a cmd) from the finish tool: the
// loops offer them in different orders.
func toolNames(tools []model.Tool) (shell, finish string) {
	shell, finish = tools[0].Name, tools[1].Name
	if !gjson.GetBytes(tools[0].Parameters, "properties.cmd").Exists() {
		shell, finish = finish, shell
	}
	return shell, finish
}

func call(id, tool string, args any) model.Reply {
	b, _ := json.Marshal(args) // maps of strings and string lists: Marshal cannot fail
	calls := []model.ToolCall{{ID: id, Name: tool, Arguments: string(b)}}
	return model.Reply{Message: model.Message{Role: model.RoleAssistant, ToolCalls: calls}}
}

// says is a reply of text alone. Every reply is the assistant's, as a provider's is: the
// trajectory records it, and the exports and the viewer read its role.
func says(text string) model.Reply {
	return model.Reply{Message: model.Message{Role: model.RoleAssistant, Content: text}}
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
