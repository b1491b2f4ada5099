package wire

import (
	"encoding/json"
	"io"
	"sync"
)

// LineWriter writes JSON lines on the control channel, each whole, from any goroutine.
type LineWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLineWriter writes lines on w.
func NewLineWriter(w io.Writer) *LineWriter { return &LineWriter{w: w} }

// WriteLine writes v as one line of JSON.
func (l *LineWriter) WriteLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(append(line, '\n'))
	return err
}
