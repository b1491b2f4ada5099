package judge

import (
	"errors"
	"fmt"
	"strings"

	"github.com/tidwall/gjson"

	"github.com/aa-grade/aa-grade/grader"
	"github.com/aa-grade/aa-grade/internal/jsonguard"
)

// ErrMalformedReply marks a judge reply that cannot be read as a mapping: the call failed.
var ErrMalformedReply = errors.New("malformed judge reply")

// maxReplyBytes bounds a reply; a mapping of a few dozen entities is a few KiB.
const maxReplyBytes = 1 << 20

// maxObjectStarts bounds how many `{` of a reply are tried as the start of the mapping.
const maxObjectStarts = 16

// Mapping is the judge's answer for one submission.
type Mapping struct {
	// Groups holds the group id of each entity the judge matched, keyed by the entity as
	// submitted (grader.DistinctEntities); unmatched entities are absent.
	Groups map[string]string
	// Notes say which parts of the reply were ignored.
	Notes []string
}

// parseReply checks a reply against the question: the first JSON object of the reply (a code
// fence or prose around it is tolerated) maps entities to a group id or null. A key naming no
// submitted entity is ignored, an unknown group id leaves its entity unmatched, and an entity
// without an answer is unmatched; each is noted. A reply with no such object, a value that is
// neither a string nor null, or no answer for any entity is malformed.
func parseReply(reply string, gt *grader.GroundTruth, entities []string) (Mapping, error) {
	if len(reply) > maxReplyBytes {
		return Mapping{}, fmt.Errorf("%w: %d bytes, more than %d", ErrMalformedReply, len(reply), maxReplyBytes)
	}
	obj, ok := firstObject([]byte(reply))
	if !ok {
		return Mapping{}, fmt.Errorf("%w: no JSON object in %.200q", ErrMalformedReply, reply)
	}
	submitted := map[string]string{} // entity and its normalised form -> entity as submitted
	for _, e := range entities {
		submitted[e] = e
		submitted[grader.ParseEntity(e).Key()] = e
	}
	m := Mapping{Groups: map[string]string{}}
	answered := map[string]bool{}
	var bad error
	obj.ForEach(func(k, v gjson.Result) bool {
		entity, ok := submitted[k.String()]
		if !ok {
			entity, ok = submitted[grader.ParseEntity(k.String()).Key()]
		}
		switch {
		case v.Type != gjson.Null && v.Type != gjson.String:
			bad = fmt.Errorf("%w: the answer for %q is %s, not a group id or null", ErrMalformedReply, k.String(), v.Raw)
			return false
		case !ok:
			m.Notes = append(m.Notes, fmt.Sprintf("%q is not a submitted entity", k.String()))
		case answered[entity]:
			m.Notes = append(m.Notes, fmt.Sprintf("%s answered twice; the first answer counts", entity))
		default:
			answered[entity] = true
			id := strings.TrimSpace(v.String())
			if id == "" {
				break // null: unmatched
			}
			if group, known := groupID(gt, id); known {
				m.Groups[entity] = group
			} else {
				m.Notes = append(m.Notes, fmt.Sprintf("unknown group %q for %s (unmatched)", id, entity))
			}
		}
		return true
	})
	if bad != nil {
		return Mapping{}, bad
	}
	if len(answered) == 0 {
		return Mapping{}, fmt.Errorf("%w: it answers none of the %d entities: %.200q", ErrMalformedReply, len(entities),
			reply)
	}
	if missing := len(entities) - len(answered); missing > 0 {
		m.Notes = append(m.Notes, fmt.Sprintf("no answer for %d of %d entities (unmatched)", missing, len(entities)))
	}
	return m, nil
}

// firstObject finds the first complete JSON object in doc.
func firstObject(doc []byte) (gjson.Result, bool) {
	tries := 0
	for i := 0; i < len(doc) && tries < maxObjectStarts; i++ {
		if doc[i] != '{' {
			continue
		}
		tries++
		end, _ := jsonguard.ClosingIndex(doc, i, 8)
		if end > 0 && gjson.ValidBytes(doc[i:end]) {
			return gjson.ParseBytes(doc[i:end]), true
		}
	}
	return gjson.Result{}, false
}

// groupID returns the ground truth's spelling of a group id (ids compare exactly, else
// case-insensitively).
func groupID(gt *grader.GroundTruth, id string) (string, bool) {
	for _, exact := range []bool{true, false} {
		for _, g := range gt.Groups {
			if g.ID == id || (!exact && strings.EqualFold(g.ID, id)) {
				return g.ID, true
			}
		}
	}
	return "", false
}
