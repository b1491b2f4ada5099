package atif

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"
)

// versions are the ATIF versions, oldest first.
var versions = []string{"ATIF-v1.0", "ATIF-v1.1", "ATIF-v1.2", "ATIF-v1.3", "ATIF-v1.4", "ATIF-v1.5", "ATIF-v1.6",
	Version}

// Check applies the rules of the format that its JSON shape (atif.schema.json) cannot say: a
// known version, at least one step, step ids 1, 2, ... in order, sources among the three,
// fields of agent steps on agent steps only (and no model's on a step of no model call), tool
// call ids unique in their step, each result
// naming a call of its own step, arguments that are a JSON object, timestamps in ISO 8601.
// It returns every rule broken, each naming its step.
func Check(t *Trajectory) error {
	var errs []error
	fail := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !slices.Contains(versions, t.SchemaVersion) {
		fail("schema_version %q is not an ATIF version", t.SchemaVersion)
	}
	if len(t.Steps) == 0 {
		fail("no steps")
	}
	for i, s := range t.Steps {
		if s.StepID != i+1 {
			fail("steps[%d]: step_id %d, want %d", i, s.StepID, i+1)
		}
		switch s.Source {
		case SourceAgent:
			if n := s.LLMCallCount; n != nil &&
				(*n < 0 || (*n == 0 && (s.Metrics != nil || s.ReasoningContent != ""))) {
				fail("step %d: llm_call_count %d with metrics or reasoning", s.StepID, *n)
			}
		case SourceSystem, SourceUser:
			if s.ModelName != "" || s.ReasoningEffort != "" || s.ReasoningContent != "" || s.ToolCalls != nil ||
				s.Metrics != nil {
				fail("step %d: a %s step has fields of agent steps", s.StepID, s.Source)
			}
		default:
			fail("step %d: source %q", s.StepID, s.Source)
		}
		if s.Timestamp != "" && !isoTime(s.Timestamp) {
			fail("step %d: timestamp %q is not ISO 8601", s.StepID, s.Timestamp)
		}
		ids := map[string]bool{}
		for _, c := range s.ToolCalls {
			if ids[c.ToolCallID] {
				fail("step %d: tool_call_id %q twice", s.StepID, c.ToolCallID)
			}
			ids[c.ToolCallID] = true
			if a := bytes.TrimSpace(c.Arguments); len(a) == 0 || a[0] != '{' {
				fail("step %d: the arguments of %q are not a JSON object", s.StepID, c.ToolCallID)
			}
		}
		if s.Observation != nil {
			for _, r := range s.Observation.Results {
				if r.SourceCallID != "" && !ids[r.SourceCallID] {
					fail("step %d: a result answers %q, no tool call of the step", s.StepID, r.SourceCallID)
				}
			}
		}
	}
	if m := t.FinalMetrics; m != nil && m.TotalSteps != nil && *m.TotalSteps < 0 {
		fail("final_metrics.total_steps %d", *m.TotalSteps)
	}
	return errors.Join(errs...)
}

// isoLayouts are the ISO 8601 forms a timestamp is read in: with a zone or without (local
// time), to the second or finer, or a date alone.
var isoLayouts = []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02T15:04", "2006-01-02"}

func isoTime(s string) bool {
	for _, layout := range isoLayouts {
		if _, err := time.Parse(layout, s); err == nil {
			return true
		}
	}
	return false
}
