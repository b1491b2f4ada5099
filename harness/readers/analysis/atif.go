package analysis

import (
	"fmt"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/harness/vocab/atif"
	"github.com/aa-grade/aa-grade/harness/vocab/model"
	"github.com/aa-grade/aa-grade/harness/vocab/runfolder"
)

// AnalyzeATIF analyses the graded episodes of a folder of ATIF trajectories (found, this
// export's or a Harbor job's) as Analyze does a run's: the model the documents name, and the
// investigation of each from its agent steps' tool calls.
func (a *Analyzer) AnalyzeATIF(dir string, found atif.Found, tasks []Task, results []grader.TaskResult) *Run {
	out := a.Analyze(dir, nil, tasks, results)
	paths := map[runfolder.Episode]string{}
	for _, e := range found.Episodes {
		paths[runfolder.Episode{Task: e.Task, Repeat: e.Repeat}] = e.Path
	}
	byID := map[string]Task{}
	for _, t := range tasks {
		byID[t.ID] = t
	}
	for i := range out.Episodes {
		ep := &out.Episodes[i]
		path, ok := paths[runfolder.Episode{Task: ep.Task, Repeat: ep.Repeat}]
		if !ok {
			continue
		}
		doc, err := atif.Read(path)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s repeat %d: %v", ep.Task, ep.Repeat, err))
			continue
		}
		if out.Model == "" {
			out.Model = doc.Model()
		}
		key, _ := a.key(byID[ep.Task]) // Analyze warned of a task without one
		fill(ep, Investigate(atifTurns(doc), key, nil), key)
	}
	out.Summary = Summarise(out.Episodes)
	return out
}

// atifTurns reads a document's agent steps as the turn records Investigate reads: each step's
// message and tool calls, its tokens. The results of a step's calls are the next record's
// input (the last step's, a summary record's, which counts no turn) for aa-grade's own export,
// worded as its shell results; another harness words them otherwise, so its failed and
// truncated commands are not counted.
func atifTurns(doc *atif.Trajectory) []runfolder.TurnRecord {
	var turns []runfolder.TurnRecord
	var pending []model.Message // the results of the previous step's calls
	for _, s := range doc.Steps {
		if s.Source != atif.SourceAgent || s.IsCopiedContext {
			continue
		}
		t := runfolder.TurnRecord{Kind: model.KindTurn, Turn: len(turns) + 1, Input: pending,
			Reply: model.Message{Role: "assistant", Content: string(s.Message)}}
		for _, c := range s.ToolCalls {
			t.Reply.ToolCalls = append(t.Reply.ToolCalls,
				model.ToolCall{ID: c.ToolCallID, Name: c.FunctionName, Arguments: string(c.Arguments)})
		}
		if m := s.Metrics; m != nil && m.PromptTokens != nil && m.CompletionTokens != nil {
			t.Usage.Input, t.Usage.Output = *m.PromptTokens, *m.CompletionTokens
		}
		turns = append(turns, t)
		pending = nil
		if doc.Agent.Name == atif.ExportAgent && s.Observation != nil {
			for _, r := range s.Observation.Results {
				if r.SourceCallID != "" && r.Content != nil {
					pending = append(pending, model.Message{Role: "tool", ToolCallID: r.SourceCallID, Content: string(*r.Content)})
				}
			}
		}
	}
	if len(pending) > 0 {
		turns = append(turns, runfolder.TurnRecord{Kind: model.KindTurn, Summary: true, Input: pending})
	}
	return turns
}
