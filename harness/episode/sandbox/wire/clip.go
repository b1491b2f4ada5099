package wire

import (
	"strings"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// Clip holds a result that came from the guest to the caps whatever the guest sent (a command
// that writes into the guest's output can forge one): each stream is cut as the guest's
// Capture cuts it, and its length is never less than what arrived. It is aa-grade's check
// on the guest, and sits here because it must cut by the very rule the Capture follows.
func Clip(r Result) Result {
	r.Stdout, r.StdoutChars = clipStream(r.Stdout, r.StdoutChars)
	r.Stderr, r.StderrChars = clipStream(r.Stderr, r.StderrChars)
	return r
}

// clipStream cuts s, a stream the guest says had claimed characters, to shellspec.OutputLimit
// characters around a notice, and returns it with its length: the larger of the claim and
// what arrived. What a Capture made (a stream within the limit, or a cut one whose notice
// gives the claimed length) stays as it is, so that an honest result is not cut twice.
func clipStream(s string, claimed int64) (string, int64) {
	if isCut(s, claimed) {
		return s, claimed
	}
	n := int64(utf8.RuneCountInString(s))
	total := max(claimed, n)
	if n <= shellspec.OutputLimit {
		return s, total
	}
	c := NewCapture(shellspec.OutputLimit)
	_, _ = c.Write([]byte(s)) // a Capture's Write never fails
	return c.cut(total), total
}

// isCut says whether s is what a Capture of shellspec.OutputLimit makes of a longer stream of total
// characters: the first shellspec.OutputLimit/2 characters, the notice, the last ones.
func isCut(s string, total int64) bool {
	if total <= shellspec.OutputLimit {
		return false
	}
	at, n := -1, 0 // at: the byte offset of the character after the head
	for i := range s {
		if n == shellspec.OutputLimit/2 {
			at = i
			break
		}
		n++
	}
	if at < 0 {
		return false
	}
	tail, ok := strings.CutPrefix(s[at:], shellspec.TruncationNotice(total, shellspec.OutputLimit))
	return ok && utf8.RuneCountInString(tail) == shellspec.OutputLimit-shellspec.OutputLimit/2
}
