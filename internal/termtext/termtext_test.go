package termtext

import (
	"encoding/json"
	"reflect"
	"testing"
	"unicode"
	"unicode/utf8"
)

// TestSanitizeRemovesAttacks: the sequences an untrusted model could print to take over a
// terminal are removed whole, and the text around them is kept.
func TestSanitizeRemovesAttacks(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"clear screen", "a\x1b[2Jb", "ab"},
		{"colour", "\x1b[41mred\x1b[0m", "red"},
		{"cursor with private parameters", "\x1b[?25l\x1b[10;20H!", "!"},
		{"title by BEL", "x\x1b]0;pwned\x07y", "xy"},
		{"title by ST", "x\x1b]2;pwned\x1b\\y", "xy"},
		{"clipboard, OSC 52", "x\x1b]52;c;aGVsbG8=\x1b\\y", "xy"},
		{"hyperlink", "\x1b]8;;http://evil/\x1b\\click\x1b]8;;\x1b\\", "click"},
		{"8-bit CSI", "a\xc2\x9b2Jb", "ab"},
		{"8-bit OSC and ST", "a\xc2\x9d0;pwned\xc2\x9cb", "ab"},
		{"DCS", "a\x1bPq#0;2;0;0;0\x1b\\b", "ab"},
		{"APC", "a\x1b_payload\x07b", "ab"},
		{"reset", "a\x1bcb", "ab"},
		{"charset", "a\x1b(0b", "ab"},
		{"OSC ended by another sequence", "a\x1b]0;pwned\x1b[2Jb", "ab"},
		{"unterminated OSC shows its text", "a\x1b]0;title", "a0;title"},
		{"lone ESC at the end", "a\x1b", "a"},
		{"ESC before a non-ASCII letter", "a\x1bé", "aé"},
		{"raw 8-bit CSI byte is invalid UTF-8", "a\x9b2J", "a\ufffd2J"},
		{"other C0, DEL and C1", "a\x00\x07\x08\x7f\xc2\x80\xc2\x9fb", "ab"},
		{"line breaks become spaces", "a\nb\tc\rd\u2028e\u0085f", "a b c d e f"},
		{"bidi override", "evil\u202eexe.txt", "evilexe.txt"},
		{"bidi isolates and marks", "\u2066a\u2069\u200fb\u061c", "ab"},
		{"invalid UTF-8", "a\xffb", "a\ufffdb"},
		{"accents, CJK, emoji", "café 日本語 👩‍💻", "café 日本語 👩‍💻"},
		{"plain", "grep -c error logs.tsv", "grep -c error logs.tsv"},
	} {
		if got := Sanitize(c.in); got != c.want {
			t.Errorf("%s: Sanitize(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
}

// FuzzSanitize: whatever the input, the output holds no control character, no bidi control
// and no invalid UTF-8; sanitizing again changes nothing; and text that holds none of those
// comes out unchanged.
// actsOnATerminal says whether r is a control character (C0, DEL, C1) or a bidirectional
// control, which no text shown on a terminal may hold.
func actsOnATerminal(r rune) bool {
	return r < 0x20 || (r >= 0x7f && r <= 0x9f) || bidi(r)
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b[2J", "\x1b[41m", "\x1b]0;pwned\x07", "\x1b]52;c;BASE64\x1b\\",
		"\xc2\x9b2J", "\x1b", "\x1b]", "a\u202eb", "café 日本語 👩‍💻", "\xff\xfe", "\x1bP\x1b\\", "\r\n\t"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := Sanitize(in)
		if !utf8.ValidString(out) {
			t.Fatalf("Sanitize(%q) = %q: invalid UTF-8", in, out)
		}
		for _, r := range out {
			if actsOnATerminal(r) {
				t.Fatalf("Sanitize(%q) = %q: holds %U", in, out, r)
			}
			if r == '\u2028' || r == '\u2029' {
				t.Fatalf("Sanitize(%q) = %q: holds the separator %U", in, out, r)
			}
		}
		if again := Sanitize(out); again != out {
			t.Fatalf("Sanitize(%q) = %q, but Sanitize of that = %q", in, out, again)
		}
		if utf8.ValidString(in) && allGraphic(in) && out != in {
			t.Fatalf("Sanitize(%q) = %q: printable text changed", in, out)
		}
	})
}

// FuzzEscapeJSON: JSON of any string, escaped, decodes to the same string and holds no
// control character, DEL or bidi control.
func FuzzEscapeJSON(f *testing.F) {
	for _, s := range []string{"", "plain", "\x1b]0;pwned\x07", "\xc2\x9b2J", "\u009d0;t\u009c", "a\u202eb\x7f", "café 👩‍💻", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		enc, err := json.Marshal(map[string][]string{in: {in, "x"}})
		if err != nil {
			t.Fatal(err)
		}
		out := EscapeJSON(enc)
		var want, got any
		if err := json.Unmarshal(enc, &want); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("EscapeJSON(%s) = %s: %v", enc, out, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("EscapeJSON(%s) = %s decodes to another value", enc, out)
		}
		for _, r := range string(out) {
			if actsOnATerminal(r) {
				t.Fatalf("EscapeJSON(%s) = %s: holds %U", enc, out, r)
			}
		}
	})
}

func allGraphic(s string) bool {
	for _, r := range s {
		if !unicode.IsGraphic(r) {
			return false
		}
	}
	return true
}
