package grader

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
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
	// Unread says why items of the list name no entity (an object without a name, a number),
	// in order; items an answer leaves out on purpose (contributing_factor false) are not here.
	Unread []string
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
		return Submission{}, fmt.Errorf("%w: %d bytes, more than the %d MiB allowed", ErrInvalidSubmission, len(doc),
			MaxSubmissionBytes>>20)
	}
	doc = bytes.TrimPrefix(doc, []byte("\xef\xbb\xbf"))
	values := jsonValues(doc)
	var fallback *Submission // the first bare array naming no entity
	for _, value := range values {
		sub, ok := extractNames(gjson.ParseBytes(value))
		switch {
		case !ok:
		case sub.isAnswer():
			if err := sub.unreadAnswer(); err != nil {
				return Submission{}, err
			}
			return sub, nil
		case fallback == nil:
			fallback = &sub
		}
	}
	if fallback != nil {
		return *fallback, nil
	}
	if len(bytes.TrimSpace(doc)) == 0 {
		return Submission{}, fmt.Errorf("%w: empty file", ErrInvalidSubmission)
	}
	if err := syntaxError(doc); err != nil {
		return Submission{}, fmt.Errorf("%w: %w", ErrInvalidSubmission, err)
	}
	if len(values) > 0 {
		return Submission{}, fmt.Errorf(
			"%w: no list of entities (expected contributing_factors, entities, or an array of names)", ErrInvalidSubmission)
	}
	return Submission{}, fmt.Errorf("%w: no JSON value found", ErrInvalidSubmission)
}

// unreadAnswer is the error of a list whose items all fail to name an entity, or nil.
func (s Submission) unreadAnswer() error {
	if len(s.Names) > 0 || len(s.Unread) == 0 {
		return nil
	}
	reasons := s.Unread[:min(len(s.Unread), maxUnreadListed)]
	more := ""
	if len(s.Unread) > len(reasons) {
		more = fmt.Sprintf("; and %d more", len(s.Unread)-len(reasons))
	}
	return fmt.Errorf("%w: %s names no entity: %s%s", ErrInvalidSubmission, s.Format, strings.Join(reasons, "; "), more)
}

// maxUnreadListed is how many unreadable items an error names.
const maxUnreadListed = 3

// syntaxError says where the JSON meant as the answer breaks: the object holding a
// contributing_factors or entities key, else the first object, else the first array. Nil
// when that value is complete (or there is none).
func syntaxError(doc []byte) error {
	start := -1
	for _, key := range []string{`"contributing_factors"`, `"entities"`} {
		if i := bytes.Index(doc, []byte(key)); i >= 0 {
			start = bytes.LastIndexByte(doc[:i], '{')
			break
		}
	}
	if start < 0 {
		start = bytes.IndexByte(doc, '{')
	}
	if start < 0 {
		start = bytes.IndexByte(doc, '[')
	}
	if start < 0 {
		return nil
	}
	var value json.RawMessage
	err := json.NewDecoder(bytes.NewReader(doc[start:])).Decode(&value)
	var syntax *json.SyntaxError
	switch {
	case errors.As(err, &syntax):
		line, col := lineColumn(doc, start+int(syntax.Offset)-1) // Offset is just past the byte at fault
		return fmt.Errorf("invalid JSON at line %d, column %d: %s", line, col, syntax.Error())
	case errors.Is(err, io.ErrUnexpectedEOF):
		line, col := lineColumn(doc, len(doc))
		return fmt.Errorf("invalid JSON: the file ends at line %d, column %d inside the value that starts at line %d", line,
			col, lineOf(doc, start))
	}
	return nil
}

// lineColumn is the line and column (both from 1, the column in bytes) of offset in doc.
func lineColumn(doc []byte, offset int) (int, int) {
	offset = min(max(offset, 0), len(doc))
	before := doc[:offset]
	return bytes.Count(before, []byte("\n")) + 1, offset - bytes.LastIndexByte(before, '\n')
}

func lineOf(doc []byte, offset int) int {
	line, _ := lineColumn(doc, offset)
	return line
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
			return namesOf(list, "contributing_factors", false), true
		}
		if list := v.Get("entities"); list.IsArray() {
			return namesOf(list, "entities", hasFlag(list)), true
		}
	case v.IsArray():
		return namesOf(v, "array", false), true
	}
	return Submission{}, false
}

// hasFlag says whether an item of list carries contributing_factor: IBM's entities list, in
// which only the items flagged true are the answer. An entities list without the flag on any
// item is read as a plain list: every entity it names is the answer.
func hasFlag(list gjson.Result) bool {
	found := false
	list.ForEach(func(_, item gjson.Result) bool {
		found = item.IsObject() && item.Get("contributing_factor").Exists()
		return !found
	})
	return found
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
// objects flagged `contributing_factor: true` count (IBM's format). Any other item is unread,
// with the reason.
func namesOf(list gjson.Result, format string, requireFlag bool) Submission {
	sub := Submission{Format: format}
	n := 0
	list.ForEach(func(_, item gjson.Result) bool {
		n++
		var name gjson.Result
		switch {
		case item.Type == gjson.String && !requireFlag:
			name = item
		case item.IsObject():
			flag := item.Get("contributing_factor")
			if (requireFlag || flag.Exists()) && flag.Type != gjson.True {
				return true // left out by the answer itself
			}
			if name = item.Get("name"); !name.Exists() {
				sub.Unread = append(sub.Unread, fmt.Sprintf("item %d has no \"name\" (keys: %s)", n, keysOf(item)))
				return true
			}
		default:
			sub.Unread = append(sub.Unread,
				fmt.Sprintf("item %d is %s, not a name or an object with \"name\"", n, jsonKind(item)))
			return true
		}
		switch {
		case name.Type != gjson.String:
			sub.Unread = append(sub.Unread, fmt.Sprintf("item %d's name is %s, not a string", n, jsonKind(name)))
		case strings.TrimSpace(name.Str) == "":
			sub.Unread = append(sub.Unread, fmt.Sprintf("item %d's name is blank", n))
		default:
			sub.Names = append(sub.Names, strings.TrimSpace(name.Str))
		}
		return true
	})
	return sub
}

// keysOf lists an object's keys, for an error message.
func keysOf(obj gjson.Result) string {
	var keys []string
	obj.ForEach(func(k, _ gjson.Result) bool {
		keys = append(keys, strconv.Quote(clipKey(k.String())))
		return len(keys) < 8
	})
	if len(keys) == 0 {
		return "none"
	}
	return strings.Join(keys, ", ")
}

// jsonKind names the type of a JSON value.
func jsonKind(v gjson.Result) string {
	switch {
	case v.IsObject():
		return "an object"
	case v.IsArray():
		return "an array"
	}
	switch v.Type {
	case gjson.Null:
		return "null"
	case gjson.Number:
		return "a number"
	case gjson.String:
		return "a string"
	}
	return "a boolean"
}

// clipKey bounds a key quoted in an error message.
func clipKey(k string) string {
	if len(k) > 40 {
		return k[:40] + "..."
	}
	return k
}
