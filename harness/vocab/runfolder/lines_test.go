package runfolder

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

// TestNextLineSkipsOnlyTheLongLine: a line over the limit is the error given and skipped,
// whether its newline comes in a later read of the buffer or in the read that crossed the
// limit; the next line is read whole, a last line with no newline is not whole, and io.EOF
// follows it.
// lineText is what nextLine gave, as text.
func lineText(b []byte, whole bool, err error) string {
	return fmt.Sprintf("%q, whole %v, %v", b, whole, err)
}

func TestNextLineSkipsOnlyTheLongLine(t *testing.T) {
	errLong := errors.New("too long")
	for _, long := range []int{50, 31} { // 16-byte buffer: the newline in a later read, or in the crossing one
		r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", long)+"\nnext\ncut"), 16)
		if _, whole, err := nextLine(r, 30, errLong); !errors.Is(err, errLong) || !whole {
			t.Errorf("%d bytes over a limit of 30: whole %v, %v; want whole and the error", long, whole, err)
		}
		if got, want := lineText(nextLine(r, 30, errLong)), `"next", whole true, <nil>`; got != want {
			t.Errorf("after %d bytes: %s; want the next line, %s", long, got, want)
		}
		if got, want := lineText(nextLine(r, 30, errLong)), `"cut", whole false, <nil>`; got != want {
			t.Errorf("the last line: %s; want it not whole, %s", got, want)
		}
		if _, _, err := nextLine(r, 30, errLong); !errors.Is(err, io.EOF) {
			t.Errorf("after the last line: %v, want io.EOF", err)
		}
	}
	r := bufio.NewReaderSize(strings.NewReader(strings.Repeat("x", 50)), 16)
	if _, whole, err := nextLine(r, 30, errLong); !errors.Is(err, errLong) || whole {
		t.Errorf("a long last line cut short: whole %v, %v; want not whole and the error", whole, err)
	}
}
