package wire

import (
	"strings"
	"unicode/utf8"

	"github.com/aa-grade/aa-grade/harness/vocab/shellspec"
)

// Capture keeps the head and the tail of a stream in bounded memory, whatever its length:
// the first shellspec.OutputLimit/2 characters, a ring of the last bytes that can hold shellspec.OutputLimit/2
// characters, and the count of all characters (bytes that are not UTF-8 count as one each,
// as they become U+FFFD). The guest captures each command's stdout and stderr with one, and
// aa-grade holds what arrives to the same rule (Clip).
type Capture struct {
	limit   int // characters kept in all
	head    []byte
	headN   int // characters in head
	ring    []byte
	ringPos int
	ringLen int
	total   int64  // characters seen
	pending []byte // an incomplete UTF-8 sequence at the end of the last write
}

// NewCapture keeps up to limit characters (half from the start, half from the end).
func NewCapture(limit int) *Capture {
	return &Capture{limit: limit, ring: make([]byte, 4*(limit-limit/2)+utf8.UTFMax)}
}

// Write never fails: the stream is consumed whatever its size.
func (c *Capture) Write(p []byte) (int, error) {
	n := len(p)
	if len(c.pending) > 0 {
		buf := append(c.pending, p...)
		c.pending = nil
		p = buf
	}
	// Hold back an incomplete sequence at the end for the next write.
	if cut := incompleteTail(p); cut > 0 {
		c.pending = append([]byte(nil), p[len(p)-cut:]...)
		p = p[:len(p)-cut]
	}
	c.consume(p)
	return n, nil
}

// incompleteTail is the length of a UTF-8 sequence cut short at the end of p (0 if none).
func incompleteTail(p []byte) int {
	for i := 1; i < utf8.UTFMax && i <= len(p); i++ {
		b := p[len(p)-i]
		if b < 0x80 {
			return 0
		}
		if utf8.RuneStart(b) {
			if !utf8.FullRune(p[len(p)-i:]) {
				return i
			}
			return 0
		}
	}
	return 0
}

func (c *Capture) consume(p []byte) {
	headLimit := c.limit / 2
	for len(p) > 0 {
		if c.headN < headLimit {
			_, size := utf8.DecodeRune(p)
			c.head = append(c.head, p[:size]...)
			c.headN++
			c.total++
			p = p[size:]
			continue
		}
		// Past the head: count characters (as decoding counts them) and keep the bytes.
		for i := 0; i < len(p); {
			if p[i] < utf8.RuneSelf {
				i++
			} else {
				_, size := utf8.DecodeRune(p[i:])
				i += size
			}
			c.total++
		}
		c.toRing(p)
		return
	}
}

func (c *Capture) toRing(p []byte) {
	if len(p) >= len(c.ring) {
		p = p[len(p)-len(c.ring):]
	}
	for len(p) > 0 {
		n := copy(c.ring[c.ringPos:], p)
		c.ringPos = (c.ringPos + n) % len(c.ring)
		c.ringLen = min(c.ringLen+n, len(c.ring))
		p = p[n:]
	}
}

// Total is the number of characters written.
func (c *Capture) Total() int64 { return c.total + int64(len(c.pending)) }

// String returns the stream, or its head and tail around a one-line notice giving the
// original length and the limit when it was longer than the limit.
func (c *Capture) String() string {
	if len(c.pending) > 0 {
		c.consume(c.pending) // the stream ended inside a sequence: count its bytes as they are
		c.pending = nil
	}
	return c.cut(c.total)
}

// cut is the stream as String gives it, its notice saying it had total characters.
func (c *Capture) cut(total int64) string {
	tail := c.ringBytes()
	if c.total <= int64(c.limit) {
		return decode(append(append([]byte(nil), c.head...), tail...))
	}
	keep := c.limit - c.limit/2
	runes := []rune(decode(skipContinuation(tail)))
	if len(runes) > keep {
		runes = runes[len(runes)-keep:]
	}
	return decode(c.head) + shellspec.TruncationNotice(total, c.limit) + string(runes)
}

func (c *Capture) ringBytes() []byte {
	if c.ringLen < len(c.ring) {
		return c.ring[:c.ringLen]
	}
	return append(append([]byte(nil), c.ring[c.ringPos:]...), c.ring[:c.ringPos]...)
}

// skipContinuation drops the bytes of a character cut at the start of the ring.
func skipContinuation(b []byte) []byte {
	for i := 0; i < len(b) && i < utf8.UTFMax; i++ {
		if utf8.RuneStart(b[i]) {
			return b[i:]
		}
	}
	return b
}

// decode turns bytes into text with one U+FFFD per byte that is not UTF-8, matching how
// Capture counts characters.
func decode(b []byte) string {
	var sb strings.Builder
	sb.Grow(len(b))
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		sb.WriteRune(r)
		b = b[size:]
	}
	return sb.String()
}
