package promptset

import (
	"errors"
	"fmt"
	"strings"
)

// errNoLiteral marks a place in a Python source where the string literal sought is not.
var errNoLiteral = errors.New("no string literal")

// pyStringAfter finds the anchors in src one after another and reads the Python string at the
// end of the last one: one literal, or several adjacent ones (which Python joins), inside
// parentheses or not. An f-string's replacement fields are kept as {expression}, to be
// mapped by the caller; doubled braces stay doubled.
func pyStringAfter(src string, anchors ...string) (string, error) {
	at := 0
	for _, a := range anchors {
		i := strings.Index(src[at:], a)
		if i < 0 {
			return "", fmt.Errorf("%w: %q not found", errNoLiteral, a)
		}
		at += i + len(a)
	}
	return pyStrings(src[at:])
}

// pyStrings reads the adjacent string literals at the start of s, after any white space,
// comments, opening parentheses and the keyword or.
func pyStrings(s string) (string, error) {
	var out strings.Builder
	read := 0
	for {
		s = skipPyNoise(s)
		text, rest, ok := pyLiteral(s)
		if !ok {
			break
		}
		out.WriteString(text)
		s, read = rest, read+1
	}
	if read == 0 {
		return "", fmt.Errorf("%w at %.40q", errNoLiteral, s)
	}
	return out.String(), nil
}

// skipPyNoise skips what may stand between the anchor, or one literal, and the next literal.
func skipPyNoise(s string) string {
	for {
		t := strings.TrimLeft(s, " \t\r\n(")
		if strings.HasPrefix(t, "#") {
			if nl := strings.IndexByte(t, '\n'); nl >= 0 {
				t = t[nl:]
			} else {
				t = ""
			}
		}
		t = strings.TrimPrefix(t, "or ")
		if t == s {
			return s
		}
		s = t
	}
}

// pyLiteral reads one string literal at the start of s (prefixes f and r, in either case;
// single, double or triple quotes) and returns its value and what follows it.
func pyLiteral(s string) (text, rest string, ok bool) {
	prefix := 0
	raw := false
	for prefix < len(s) && prefix < 2 && strings.ContainsRune("fFrR", rune(s[prefix])) {
		raw = raw || s[prefix] == 'r' || s[prefix] == 'R'
		prefix++
	}
	body := s[prefix:]
	var quote string
	switch {
	case strings.HasPrefix(body, `"""`), strings.HasPrefix(body, `'''`):
		quote = body[:3]
	case strings.HasPrefix(body, `"`), strings.HasPrefix(body, `'`):
		quote = body[:1]
	default:
		return "", s, false
	}
	body = body[len(quote):]
	var out strings.Builder
	for i := 0; i < len(body); i++ {
		switch {
		case strings.HasPrefix(body[i:], quote):
			return out.String(), body[i+len(quote):], true
		case body[i] == '\\' && !raw && i+1 < len(body):
			i++
			out.WriteString(pyEscape(body[i]))
		case body[i] == '\n' && len(quote) == 1:
			return "", s, false // an unterminated literal
		default:
			out.WriteByte(body[i])
		}
	}
	return "", s, false
}

// pyEscape is what a backslash escape of a Python string stands for (the ones texts use).
func pyEscape(c byte) string {
	switch c {
	case 'n':
		return "\n"
	case 't':
		return "\t"
	case '\n':
		return "" // a line continuation
	}
	return string(c)
}
