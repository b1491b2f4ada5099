package provider

import (
	"context"
	"io"
	"time"
)

// idleReader reads an answer's body, cancelling its request (with errIdle) when no byte has
// come for idle: the read under way then fails, and the attempt with it.
type idleReader struct {
	r     io.Reader
	idle  time.Duration
	timer *time.Timer
}

// newIdleReader starts the idle clock of body now.
func newIdleReader(body io.Reader, idle time.Duration, cancel context.CancelCauseFunc) *idleReader {
	return &idleReader{r: body, idle: idle, timer: time.AfterFunc(idle, func() { cancel(errIdle) })}
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	if err != nil {
		r.timer.Stop()
	}
	return n, err
}
