// Package jsonguard checks untrusted JSON before it reaches gjson, whose validation recurses
// once per nesting level: a document nested millions deep must be refused, not walked.
package jsonguard

// scanner follows the nesting of brackets outside JSON strings, a byte at a time.
type scanner struct {
	depth             int
	inString, escaped bool
}

// step consumes one byte and reports whether it closed a bracket.
func (s *scanner) step(c byte) (closed bool) {
	if s.inString {
		switch {
		case s.escaped:
			s.escaped = false
		case c == '\\':
			s.escaped = true
		case c == '"':
			s.inString = false
		}
		return false
	}
	switch c {
	case '"':
		s.inString = true
	case '{', '[':
		s.depth++
	case '}', ']':
		s.depth--
		return true
	}
	return false
}

// Shallow reports whether no array or object in doc nests deeper than limit. Brackets inside
// strings do not count.
func Shallow[T string | []byte](doc T, limit int) bool {
	var s scanner
	for i := range len(doc) {
		if s.step(doc[i]); s.depth > limit {
			return false
		}
	}
	return true
}

// ClosingIndex returns the index just past the bracket that closes the one at start, and how
// many bytes it scanned. The index is -1 when the bracket is never closed or the value nests
// deeper than limit.
func ClosingIndex(doc []byte, start, limit int) (end, scanned int) {
	var s scanner
	for i := start; i < len(doc); i++ {
		closed := s.step(doc[i])
		switch {
		case s.depth > limit:
			return -1, i - start + 1
		case closed && s.depth == 0:
			return i + 1, i - start + 1
		}
	}
	return -1, len(doc) - start
}
