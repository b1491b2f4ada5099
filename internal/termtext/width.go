package termtext

import "unicode"

// Width is how many columns a terminal gives sanitized text (Sanitize's output): two for a
// wide character (CJK, Hangul, fullwidth forms, most emoji), none for a combining mark or a
// zero-width format character, one for the others. A live display measures its lines with it,
// so that none wraps and the display can be redrawn in place.
func Width(s string) int {
	n := 0
	for _, r := range s {
		n += runeWidth(r)
	}
	return n
}

// Clip cuts sanitized text to at most cols columns, ending it with "..." when it was cut.
func Clip(s string, cols int) string {
	if Width(s) <= cols {
		return s
	}
	const ellipsis = "..."
	room := cols - len(ellipsis)
	if room < 0 {
		return ellipsis[:max(cols, 0)]
	}
	used := 0
	for i, r := range s {
		if used+runeWidth(r) > room {
			return s[:i] + ellipsis
		}
		used += runeWidth(r)
	}
	return s
}

func runeWidth(r rune) int {
	switch {
	case unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf):
		return 0
	case wide(r):
		return 2
	}
	return 1
}

// wide reports the East Asian Wide and Fullwidth characters, and the emoji shown as wide
// (Unicode's East_Asian_Width W and F, in the blocks that hold them).
func wide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115f, // Hangul Jamo initials
		r >= 0x2e80 && r <= 0x303e, // CJK radicals, punctuation
		r >= 0x3041 && r <= 0x33ff, // kana, CJK compatibility
		r >= 0x3400 && r <= 0x4dbf, // CJK extension A
		r >= 0x4e00 && r <= 0x9fff, // CJK unified ideographs
		r >= 0xa000 && r <= 0xa4cf, // Yi
		r >= 0xac00 && r <= 0xd7a3, // Hangul syllables
		r >= 0xf900 && r <= 0xfaff, // CJK compatibility ideographs
		r >= 0xfe30 && r <= 0xfe4f, // CJK compatibility forms
		r >= 0xff00 && r <= 0xff60, // fullwidth forms
		r >= 0xffe0 && r <= 0xffe6,
		r >= 0x1f300 && r <= 0x1f64f, // emoji: pictographs, emoticons
		r >= 0x1f900 && r <= 0x1f9ff,
		r >= 0x20000 && r <= 0x3fffd: // CJK extensions B and on
		return true
	}
	return false
}
