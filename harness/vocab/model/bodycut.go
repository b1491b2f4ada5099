package model

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// CutBody records in e the beginning of body, not all of it: Body becomes a JSON string of
// its first bytes, at most limit bytes once quoted (bytes that are not text quote to six
// times their size, so the cut is made on the quoted length), and BodyBytes and BodySHA256
// say what the whole was. It is how a record keeps a body it must not keep whole: a request
// the gateway refused, a body past an episode's bound on its trajectory.
func (e *Event) CutBody(body []byte, limit int) {
	sum := sha256.Sum256(body)
	e.BodyBytes, e.BodySHA256 = int64(len(body)), hex.EncodeToString(sum[:])
	n := min(len(body), limit)
	for {
		quoted, _ := json.Marshal(string(body[:n])) // a string
		if len(quoted) <= limit || n == 0 {
			e.Body = quoted
			return
		}
		// Shrink in proportion to the overshoot, at least by one byte.
		n = min(n-1, n*limit/len(quoted))
	}
}
