package snapshot

import (
	"bufio"
	"io"
	"strings"
)

// TSVWriter writes tables exactly as the recorder's pandas `to_csv(sep="\t")` does: `\n`
// line ends, a field quoted with `"` only when it holds a tab, a line break or a quote, inner
// quotes doubled.
type TSVWriter struct {
	w *bufio.Writer
}

// NewTSVWriter writes to w through a buffer; call Flush at the end.
func NewTSVWriter(w io.Writer) *TSVWriter { return &TSVWriter{w: bufio.NewWriterSize(w, 256<<10)} }

// Write writes one record. A record of one empty field is written `""`, as pandas does, so
// that it is not a blank line (which readers skip).
//
// A bufio.Writer keeps its first error and returns it from every call after: the last
// WriteByte's error is the record's, and the writes before it go unchecked.
func (t *TSVWriter) Write(fields ...string) error {
	if len(fields) == 1 && fields[0] == "" {
		_, _ = t.w.WriteString(`""`)
		return t.w.WriteByte('\n')
	}
	for i, f := range fields {
		if i > 0 {
			_ = t.w.WriteByte('\t')
		}
		if !strings.ContainsAny(f, "\t\n\r\"") {
			_, _ = t.w.WriteString(f)
			continue
		}
		_ = t.w.WriteByte('"')
		_, _ = t.w.WriteString(strings.ReplaceAll(f, `"`, `""`))
		_ = t.w.WriteByte('"')
	}
	return t.w.WriteByte('\n')
}

// Flush writes out what is buffered.
func (t *TSVWriter) Flush() error { return t.w.Flush() }
