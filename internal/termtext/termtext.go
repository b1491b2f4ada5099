// Package termtext makes untrusted text safe to print on a terminal. Text from the model, the
// sandbox, a dataset or a provider may hold escape sequences that a terminal obeys instead of
// showing: clear the screen, recolour it, set the window title, write the clipboard (OSC 52),
// or bidi controls that show text in another order than it is written. It also measures such
// text in terminal columns, for displays that must not wrap.
package termtext

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

const (
	esc = 0x1b
	bel = 0x07
	st  = '\u009c' // STRING TERMINATOR, 8-bit
)

// Sanitize returns s as one line that a terminal shows as it is written. Escape sequences (CSI,
// OSC, DCS and the other control strings, two-character escapes; 7-bit and 8-bit forms) are
// removed whole, so their payload does not show either; tab, newline, carriage return and the
// other line breaks become a space; the other C0 and C1 controls, DEL and the bidi controls
// are removed; invalid UTF-8 becomes U+FFFD. Other text (accents, CJK, emoji) is kept.
func Sanitize(s string) string {
	if plain(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); {
		if n := sequenceLen(s[i:]); n > 0 {
			i += n
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		i += n
		switch {
		case breaksLine(r):
			b.WriteByte(' ')
		case r < 0x20 || (r >= 0x7f && r <= 0x9f) || bidi(r):
			// removed
		default:
			b.WriteRune(r) // invalid UTF-8 decodes as, and is written as, U+FFFD
		}
	}
	return b.String()
}

// EscapeJSON makes JSON from encoding/json safe for a terminal without changing what it
// decodes to. encoding/json escapes C0 controls (ESC among them) but writes DEL, C1 controls
// (the 8-bit CSI among them) and bidi controls as they are; those can only stand in strings,
// where they become \uXXXX escapes.
func EscapeJSON(b []byte) []byte {
	var out []byte // nil until something needs escaping
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case r == 0x7f || (r >= 0x80 && r <= 0x9f) || bidi(r):
			if out == nil {
				out = append(make([]byte, 0, len(b)+16), b[:i]...)
			}
			out = fmt.Appendf(out, `\u%04x`, r)
		case out != nil:
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	if out == nil {
		return b
	}
	return out
}

// plain reports whether s is printable ASCII only, which needs no change.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// sequenceLen is the length in bytes of the escape sequence s starts with, or 0. An escape
// with nothing after it, or followed by a byte that cannot continue it, is just the ESC; a
// control string with no terminator is just its introducer, so its text shows (inert, since
// the controls in it are removed) rather than everything after it being dropped.
func sequenceLen(s string) int {
	var intro int // bytes of the introducer
	var str bool  // a control string, ended by BEL or ST
	switch r, n := utf8.DecodeRuneInString(s); {
	case r == esc && len(s) == 1:
		return 1
	case r == esc && s[1] == '[':
		intro = 2
	case r == esc && strings.IndexByte("]PX^_", s[1]) >= 0: // OSC, DCS, SOS, PM, APC
		intro, str = 2, true
	case r == esc:
		i := 1
		for i < len(s) && s[i] >= 0x20 && s[i] <= 0x2f { // intermediate bytes
			i++
		}
		if i < len(s) && s[i] >= 0x30 && s[i] <= 0x7e { // final byte
			i++
		}
		return i
	case r == '\u009b': // CSI
		intro = n
	case r == '\u009d' || r == '\u0090' || r == '\u0098' || r == '\u009e' || r == '\u009f':
		intro, str = n, true
	default:
		return 0
	}
	if str {
		return intro + stringLen(s[intro:])
	}
	return intro + csiLen(s[intro:])
}

// csiLen is the length of a control sequence's parameter and intermediate bytes and its final
// byte; it stops early at any other byte, which is then handled as text.
func csiLen(s string) int {
	i := 0
	for i < len(s) && s[i] >= 0x20 && s[i] <= 0x3f {
		i++
	}
	if i < len(s) && s[i] >= 0x40 && s[i] <= 0x7e {
		i++
	}
	return i
}

// stringLen is the length of a control string's text and terminator (BEL, ESC \ or ST), or 0
// when it has none. Another ESC ends the string, as on a terminal, and starts a sequence of
// its own.
func stringLen(s string) int {
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == bel || r == st:
			return i + n
		case r == esc && i+1 < len(s) && s[i+1] == '\\':
			return i + 2
		case r == esc:
			return i
		}
		i += n
	}
	return 0
}

// breaksLine reports whether r moves to another column or line: it becomes a space.
func breaksLine(r rune) bool {
	switch r {
	case '\t', '\n', '\v', '\f', '\r', '\u0085', '\u2028', '\u2029':
		return true
	}
	return false
}

// bidi reports whether r is a bidi mark, embedding, override or isolate: invisible
// characters that reorder what follows them.
func bidi(r rune) bool {
	return r == '\u061c' || r == '\u200e' || r == '\u200f' || (r >= '\u202a' && r <= '\u202e') ||
		(r >= '\u2066' && r <= '\u2069')
}
