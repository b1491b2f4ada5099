package grader

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// MaxSubmissionBytes bounds a submission; anything larger is invalid.
const MaxSubmissionBytes = 4 << 20

// Looking for JSON inside prose tries at most maxJSONStarts `{` or `[` positions and scans at
// most maxJSONScanBytes in all, so hostile input (megabytes of `[`) costs bounded work.
const (
	maxJSONStarts    = 64
	maxJSONScanBytes = 32 << 20
)

// ErrInvalidSubmission marks a submission that cannot be read; the message says why. Such an
// episode has status `invalid` and scores 0.
var ErrInvalidSubmission = errors.New("invalid submission")

// Submission is what a diagnosis file names as root causes.
type Submission struct {
	Names  []string
	Format string // contributing_factors, entities or array
}

// ReadSubmission reads a diagnosis in any accepted form: the reference format
// `{"contributing_factors":[{"name": ...}]}`, IBM's `{"entities":[{"name": ...,
// "contributing_factor": true}]}` (only true entries count), or a bare array of names or of
// objects with `name`. The JSON may be wrapped in a Markdown code fence or surrounded by prose:
// the first complete JSON value holding a recognisable list is used, except that a bare array
// naming no entity (a list of files quoted in the prose) gives way to a later value that is an
// answer (see isAnswer).
func ReadSubmission(doc []byte) (Submission, error) {
	if len(doc) > MaxSubmissionBytes {
		return Submission{}, fmt.Errorf("%w: %d bytes, more than the %d MiB allowed", ErrInvalidSubmission, len(doc), MaxSubmissionBytes>>20)
	}
	doc = bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	values := jsonValues(doc)
	var fallback *Submission // the first bare array naming no entity
	for _, value := range values {
		sub, ok := extractNames(gjson.ParseBytes(value))
		switch {
		case !ok:
		case sub.isAnswer():
			return sub, nil
		case fallback == nil:
			fallback = &sub
		}
	}
	if fallback != nil {
		return *fallback, nil
	}
	if len(values) > 0 {
		return Submission{}, fmt.Errorf("%w: no list of entities (expected contributing_factors, entities, or an array of names)", ErrInvalidSubmission)
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return Submission{}, fmt.Errorf("%w: empty file", ErrInvalidSubmission)
	}
	return Submission{}, fmt.Errorf("%w: no JSON value found", ErrInvalidSubmission)
}

// jsonValues yields the complete JSON values of doc in the order they should be tried: the
// whole document, then each value that starts at a `{` or `[` (which covers code fences and
// prose around the JSON).
func jsonValues(doc []byte) [][]byte {
	trimmed := bytes.TrimSpace(doc)
	if len(trimmed) > 0 && trimmed[0] != '{' && trimmed[0] != '[' && gjson.ValidBytes(trimmed) {
		return [][]byte{trimmed} // a scalar: valid JSON, but never a list
	}
	var values [][]byte
	tries, budget := 0, maxJSONScanBytes
	for i := 0; i < len(doc) && tries < maxJSONStarts && budget > 0; i++ {
		if doc[i] != '{' && doc[i] != '[' {
			continue
		}
		tries++
		end, scanned := jsonguard.ClosingIndex(doc, i, maxJSONDepth)
		budget -= scanned
		if end > 0 && gjson.ValidBytes(doc[i:end]) {
			values = append(values, doc[i:end])
			i = end - 1
		}
	}
	return values
}

// maxJSONDepth bounds nesting: gjson validates recursively, and a submission nested deeper
// than any real one could exhaust the stack.
const maxJSONDepth = 256

// extractNames finds the list of entity names in a JSON value.
func extractNames(v gjson.Result) (Submission, bool) {
	switch {
	case v.IsObject():
		if list := v.Get("contributing_factors"); list.IsArray() {
			return Submission{Names: namesOf(list, false), Format: "contributing_factors"}, true
		}
		if list := v.Get("entities"); list.IsArray() {
			return Submission{Names: namesOf(list, true), Format: "entities"}, true
		}
	case v.IsArray():
		return Submission{Names: namesOf(v, false), Format: "array"}, true
	}
	return Submission{}, false
}

// isAnswer tells an answer from a list quoted in prose: the contributing_factors and entities
// forms always are, a bare array only when one of its names is an entity of a kind the grader
// knows. A reply that first mentions ["alerts","k8s_events_raw.tsv"] and then gives its
// diagnosis must be graded on the diagnosis.
func (s Submission) isAnswer() bool {
	return s.Format != "array" || slices.ContainsFunc(s.Names, namesKnownKind)
}

// namesOf takes the names of a list whose items are strings or objects with `name`. An object
// whose `contributing_factor` is present and not true is left out; with requireFlag, only
// objects flagged `contributing_factor: true` count (IBM's format).
func namesOf(list gjson.Result, requireFlag bool) []string {
	var names []string
	list.ForEach(func(_, item gjson.Result) bool {
		var name gjson.Result
		switch {
		case item.Type == gjson.String && !requireFlag:
			name = item
		case item.IsObject():
			flag := item.Get("contributing_factor")
			if (requireFlag || flag.Exists()) && flag.Type != gjson.True {
				return true
			}
			name = item.Get("name")
		}
		if name.Type == gjson.String && strings.TrimSpace(name.Str) != "" {
			names = append(names, strings.TrimSpace(name.Str))
		}
		return true
	})
	return names
}
