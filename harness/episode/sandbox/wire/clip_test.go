package wire

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// TestClipStreamForgedNotice: a stream with a notice where Capture puts it but too long a tail
// is not taken for a Capture's, and is cut.
func TestClipStreamForgedNotice(t *testing.T) {
	const total = 1_000_000
	notice := shellspec.TruncationNotice(total, shellspec.OutputLimit)
	s := strings.Repeat("h", shellspec.OutputLimit/2) + notice + strings.Repeat("t", 50000)
	got, n := clipStream(s, total)
	if want := shellspec.OutputLimit + utf8.RuneCountInString(notice); n != total || utf8.RuneCountInString(got) != want {
		t.Fatalf("%d characters (%d counted), want %d (%d)", utf8.RuneCountInString(got), n, want, total)
	}
}
