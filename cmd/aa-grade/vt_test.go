package main

import (
	"strconv"
	"strings"
)

// vt is a terminal, as far as the live displays use one: text that wraps at its width,
// carriage return, newline (as the tty's onlcr sends it: CR LF), cursor up (CSI n A), erase
// below (CSI J) and erase to the end of the row (CSI K), with the deferred wrap of a line that
// reaches the last column. Resized, it rewraps its lines, as most terminals do (VTE, iTerm2,
// Terminal.app, Windows Terminal, kitty, tmux). A character is one column. The cursor cannot
// leave the screen, which is as tall as its text.
type vt struct {
	cols    int
	lines   [][]rune // logical lines: one longer than cols shows on several rows
	line    int      // the cursor: a logical line,
	off     int      // an offset in it,
	pending bool     // and whether it waits at the last column for the next character to wrap
}

func newVT(cols int) *vt { return &vt{cols: cols, lines: [][]rune{nil}} }

func (t *vt) rowsOf(l []rune) int { return max(1, (len(l)+t.cols-1)/t.cols) }

// row is the cursor's row within its logical line.
func (t *vt) row() int {
	if t.pending {
		return t.off/t.cols - 1
	}
	return t.off / t.cols
}

func (t *vt) Write(p []byte) (int, error) {
	s := []rune(string(p))
	for i := 0; i < len(s); i++ {
		switch r := s[i]; {
		case r == '\r':
			t.off, t.pending = t.row()*t.cols, false
		case r == '\n':
			if r := t.row(); r+1 < t.rowsOf(t.lines[t.line]) {
				t.off = (r + 1) * t.cols
			} else {
				t.line++
				if t.line == len(t.lines) {
					t.lines = append(t.lines, nil)
				}
				t.off = 0
			}
			t.pending = false
		case r == 0x1b && i+1 < len(s) && s[i+1] == '[':
			j := i + 2
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			n, _ := strconv.Atoi(string(s[i+2 : j]))
			t.csi(s[j], max(n, 1))
			i = j
		default:
			l := t.lines[t.line]
			for len(l) < t.off {
				l = append(l, ' ')
			}
			if t.off < len(l) {
				l[t.off] = r
			} else {
				l = append(l, r)
			}
			t.lines[t.line] = l
			t.off++
			t.pending = t.off%t.cols == 0
		}
	}
	return len(p), nil
}

func (t *vt) csi(final rune, n int) {
	l := t.lines[t.line]
	switch final {
	case 'A':
		col := min(t.off-t.row()*t.cols, t.cols-1)
		target := max(t.rowsBefore()+t.row()-n, 0)
		for t.line = 0; target >= t.rowsOf(t.lines[t.line]); t.line++ {
			target -= t.rowsOf(t.lines[t.line])
		}
		t.off, t.pending = target*t.cols+col, false
	case 'J':
		t.lines[t.line] = l[:min(t.off, len(l))]
		t.lines = t.lines[:t.line+1]
	case 'K':
		end := (t.row() + 1) * t.cols
		if len(l) <= end {
			t.lines[t.line] = l[:min(t.off, len(l))]
		} else {
			for i := t.off; i < end; i++ {
				l[i] = ' '
			}
		}
	default:
		panic("vt: unknown sequence CSI " + string(final))
	}
}

// rowsBefore is the rows of the logical lines above the cursor's.
func (t *vt) rowsBefore() int {
	n := 0
	for _, l := range t.lines[:t.line] {
		n += t.rowsOf(l)
	}
	return n
}

// resize changes the width; the lines rewrap and the cursor stays at its character.
func (t *vt) resize(cols int) { t.cols, t.pending = cols, false }

// rows is the screen as it shows, row by row, without trailing blanks.
func (t *vt) rows() []string {
	var out []string
	for _, l := range t.lines {
		for r := range t.rowsOf(l) {
			out = append(out, strings.TrimRight(string(l[min(r*t.cols, len(l)):min((r+1)*t.cols, len(l))]), " "))
		}
	}
	return out
}

// count is how many rows hold s.
func (t *vt) count(s string) int {
	n := 0
	for _, r := range t.rows() {
		if strings.Contains(r, s) {
			n++
		}
	}
	return n
}
