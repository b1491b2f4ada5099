package atif

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path"
	"strings"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/safefile"
)

// MaxBytes bounds a trajectory read: a long agent run with large tool outputs is tens of MB.
const MaxBytes = 256 << 20

// Read reads the ATIF document at path: a regular file of at most MaxBytes, JSON, whose
// schema_version is an ATIF version. Fields the reader has no use for are ignored, so that
// documents of every version and of any harness read.
func Read(path string) (*Trajectory, error) {
	b, err := safefile.ReadPath(path, MaxBytes)
	if err != nil {
		return nil, err
	}
	var t Trajectory
	if err := json.Unmarshal(b, &t); err != nil {
		return nil, fmt.Errorf("%s: not an ATIF document: %w", path, err)
	}
	if !strings.HasPrefix(t.SchemaVersion, "ATIF-v") {
		return nil, fmt.Errorf("%s: not an ATIF document (schema_version %q)", path, t.SchemaVersion)
	}
	return &t, nil
}

// ExtraPath is the key of an observation result's extra naming the file the result holds:
// aa-grade's export puts the submission, grader.SubmissionFile, in the last step so.
const ExtraPath = "path"

// Diagnosis is the answer the trajectory ends with, and where it was found: the last result
// that holds grader.SubmissionFile (its extra's path names it, or the tool call it answers
// does) when it reads as a diagnosis, else the last agent message that does; else the first of
// the two found, which grades as invalid. ok is false when the trajectory has neither.
func Diagnosis(t *Trajectory) (doc []byte, where string, ok bool) {
	file, fileAt := lastSubmissionResult(t)
	msg, msgAt := lastAgentMessage(t)
	switch {
	case file != nil && reads(file):
		return file, fileAt, true
	case msg != nil && reads(msg):
		return msg, msgAt, true
	case file != nil:
		return file, fileAt, true
	case msg != nil:
		return msg, msgAt, true
	}
	return nil, "", false
}

func reads(doc []byte) bool {
	_, err := grader.ReadSubmission(doc)
	return err == nil
}

// lastSubmissionResult is the content of the last observation result holding the submission
// file.
func lastSubmissionResult(t *Trajectory) ([]byte, string) {
	for i := len(t.Steps) - 1; i >= 0; i-- {
		s := t.Steps[i]
		if s.Observation == nil {
			continue
		}
		rs := s.Observation.Results
		for j := len(rs) - 1; j >= 0; j-- {
			r := rs[j]
			if r.Content != nil && namesSubmission(s, r) {
				return []byte(*r.Content), fmt.Sprintf("step %d, the result of %s", s.StepID, grader.SubmissionFile)
			}
		}
	}
	return nil, ""
}

// namesSubmission says whether the result r of step s holds the submission file: its extra's
// path is the file, or it answers a call whose arguments name the file and it begins with a
// JSON value (the file read back; a call that wrote it answers with the write's output).
func namesSubmission(s Step, r ObservationResult) bool {
	if p, ok := r.Extra[ExtraPath].(string); ok {
		return path.Base(p) == grader.SubmissionFile
	}
	if r.SourceCallID == "" {
		return false
	}
	for _, c := range s.ToolCalls {
		if c.ToolCallID == r.SourceCallID && bytes.Contains(c.Arguments, []byte(grader.SubmissionFile)) {
			content := strings.TrimSpace(string(*r.Content))
			return strings.HasPrefix(content, "{") || strings.HasPrefix(content, "[")
		}
	}
	return false
}

// lastAgentMessage is the last agent step's message that is not empty.
func lastAgentMessage(t *Trajectory) ([]byte, string) {
	for i := len(t.Steps) - 1; i >= 0; i-- {
		s := t.Steps[i]
		if s.Source == SourceAgent && strings.TrimSpace(string(s.Message)) != "" {
			return []byte(s.Message), fmt.Sprintf("step %d, the agent's message", s.StepID)
		}
	}
	return nil, ""
}
