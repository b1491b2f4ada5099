package termtext

import "strings"

// Wrap breaks sanitized text into lines of at most cols columns at spaces, the lines after
// the first starting with indent, so that a terminal never breaks a word in two; a word wider
// than a line is cut where the line ends. cols <= 0 leaves the text on one line.
func Wrap(s string, cols int, indent string) []string {
	if cols <= 0 || Width(s) <= cols {
		return []string{s}
	}
	var lines []string
	line, lead := "", ""
	flush := func() {
		lines = append(lines, line)
		line, lead = "", indent
	}
	for _, word := range strings.Fields(s) {
		if line != "" && Width(line)+1+Width(word) <= cols {
			line += " " + word
			continue
		}
		if line != "" {
			flush()
		}
		for Width(lead)+Width(word) > cols && Width(lead) < cols { // a word no line holds
			cut := cutAt(word, cols-Width(lead))
			line, word = lead+word[:cut], word[cut:]
			flush()
		}
		if word != "" {
			line = lead + word
		}
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// cutAt is the byte offset where s's first cols columns end (at least one rune).
func cutAt(s string, cols int) int {
	used := 0
	for i, r := range s {
		if used+runeWidth(r) > cols && i > 0 {
			return i
		}
		used += runeWidth(r)
	}
	return len(s)
}
