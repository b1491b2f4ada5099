package wire

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

func captured(limit int, chunks ...string) *Capture {
	c := NewCapture(limit)
	for _, ch := range chunks {
		c.Write([]byte(ch))
	}
	return c
}

func TestCaptureBoundaries(t *testing.T) {
	exact := strings.Repeat("a", 20)
	if got := captured(20, exact).String(); got != exact {
		t.Fatalf("at the limit: %q", got)
	}
	over := strings.Repeat("a", 10) + "X" + strings.Repeat("b", 10)
	got := captured(20, over).String()
	want := strings.Repeat("a", 10) + "\n[... output truncated: 21 characters in all, limit 20; the first and last 10 are shown ...]\n" + strings.Repeat("b", 10)
	if got != want {
		t.Fatalf("one over:\n%q\nwant\n%q", got, want)
	}
	if got := captured(20, "").String(); got != "" {
		t.Fatalf("empty: %q", got)
	}
}

func TestCaptureMultibyteSplitAcrossWrites(t *testing.T) {
	text := strings.Repeat("é漢😀", 10) // 30 characters, 2-, 3- and 4-byte
	b := []byte(text)
	c := NewCapture(20)
	for i := range b { // one byte at a time: every sequence is split
		c.Write(b[i : i+1])
	}
	if c.Total() != 30 {
		t.Fatalf("total = %d", c.Total())
	}
	got := c.String()
	runes := []rune(text)
	want := string(runes[:10]) + "\n[... output truncated: 30 characters in all, limit 20; the first and last 10 are shown ...]\n" + string(runes[20:])
	if got != want || !utf8.ValidString(got) {
		t.Fatalf("got %q\nwant %q", got, want)
	}
}

func TestCaptureBinary(t *testing.T) {
	bin := string([]byte{0xff, 0xfe, 0x00, 0x80, 'a', 0xe6, 0xbc}) // invalid bytes, a cut sequence at the end
	got := captured(100, bin).String()
	if !utf8.ValidString(got) || got != "\uFFFD\uFFFD\x00\uFFFDa\uFFFD\uFFFD" {
		t.Fatalf("binary: %q", got)
	}
}

func TestCaptureStaysBounded(t *testing.T) {
	c := NewCapture(shellspec.OutputLimit)
	line := []byte(strings.Repeat("x", 1023) + "\n")
	for range 64 << 10 { // 64 MiB
		c.Write(line)
	}
	if c.Total() != 64<<20 {
		t.Fatalf("total = %d", c.Total())
	}
	if len(c.head) > 4*shellspec.OutputLimit || len(c.ring) > 4*shellspec.OutputLimit+utf8.UTFMax {
		t.Fatalf("buffers grew: head %d ring %d", len(c.head), len(c.ring))
	}
	if got := utf8.RuneCountInString(c.String()); got > shellspec.OutputLimit+200 {
		t.Fatalf("result has %d characters", got)
	}
}
