// Package jsonguard checks untrusted JSON before it reaches gjson, whose validation recurses
// once per nesting level: a document nested millions deep must be refused, not walked.
package jsonguard

// Shallow reports whether no array or object in doc nests deeper than limit. Brackets inside
// strings do not count.
func Shallow[T string | []byte](doc T, limit int) bool {
	depth, inString, escaped := 0, false, false
	for i := range len(doc) {
		c := doc[i]
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > limit {
				return false
			}
		case '}', ']':
			depth--
		}
	}
	return true
}
