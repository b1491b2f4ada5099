package gateway

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/tidwall/gjson"
)

// The gateway changes a request's body only where it must, in place, leaving every other byte
// as the agent sent it.

// replaceValue puts the JSON string s where v, a value of the top level of body read with
// gjson (so its Index is known), stands.
func replaceValue(body []byte, v gjson.Result, s string) []byte {
	quoted, _ := json.Marshal(s) // a string
	return slices.Concat(body[:v.Index], quoted, body[v.Index+len(v.Raw):])
}

// streams reads whether a call of the protocols that say so in the body (all but Gemini, whose
// path says it) is streamed: its stream field must be true, false or null (or absent), as
// the APIs document it, since a provider that coerces other values (1, "yes") would stream a
// call the gateway took for a plain one.
func streams(body []byte) (bool, error) {
	switch v := gjson.GetBytes(body, "stream"); v.Type {
	case gjson.True:
		return true, nil
	case gjson.False, gjson.Null:
		return false, nil
	default:
		return false, fmt.Errorf("stream must be true or false, not %s", v.Raw)
	}
}

// withStreamUsage asks a streamed Chat Completions call for its usage (stream_options
// include_usage), which the API sends only when asked, as a last chunk with no choices: the
// caps and the cost need it. A body that asks already is returned as it is.
func withStreamUsage(body []byte) []byte {
	opts := gjson.GetBytes(body, "stream_options")
	switch {
	case opts.Get("include_usage").Type == gjson.True:
		return body
	case opts.IsObject():
		var fields map[string]json.RawMessage
		if json.Unmarshal([]byte(opts.Raw), &fields) != nil {
			return body
		}
		fields["include_usage"] = json.RawMessage("true")
		merged, _ := json.Marshal(fields) // raw messages that were valid JSON
		return slices.Concat(body[:opts.Index], merged, body[opts.Index+len(opts.Raw):])
	case opts.Exists(): // null, or not an object: the agent's, replaced
		return slices.Concat(body[:opts.Index], []byte(`{"include_usage":true}`), body[opts.Index+len(opts.Raw):])
	}
	// The body is a JSON object that names a model: the field goes first.
	open := slices.Index(body, '{')
	return slices.Concat(body[:open+1], []byte(`"stream_options":{"include_usage":true},`), body[open+1:])
}
