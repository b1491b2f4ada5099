package provider

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"time"
)

// idleReader reads an answer's body, cancelling its request (with errIdle) when no byte has
// come for idle: the read under way then fails, and the attempt with it.
type idleReader struct {
	r     io.Reader
	idle  time.Duration
	timer *time.Timer
	fired atomic.Bool
}

// newIdleReader starts the idle clock of body now.
func newIdleReader(body io.Reader, idle time.Duration, cancel context.CancelCauseFunc) *idleReader {
	r := &idleReader{r: body, idle: idle}
	r.timer = time.AfterFunc(idle, func() {
		r.fired.Store(true)
		cancel(errIdle)
	})
	return r
}

// NewIdleBody is an answer's body read with an idle clock started now: when no byte comes for
// idle, it cancels the request the body answers (cancel, that request's context's) and its
// reads fail with an error Classify finds transient, as a provider's answer that stops coming
// does; closing it stops the clock. The model gateway reads its upstream's answers so.
func NewIdleBody(body io.ReadCloser, idle time.Duration, cancel context.CancelCauseFunc) io.ReadCloser {
	return idleBody{newIdleReader(body, idle, cancel), body}
}

// idleBody is an idleReader that stops its clock when closed (an answer read only up to its
// last event is closed unread to its end).
type idleBody struct {
	*idleReader
	body io.Closer
}

func (b idleBody) Close() error {
	b.timer.Stop()
	return b.body.Close()
}

func (r *idleReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if n > 0 {
		r.timer.Reset(r.idle)
	}
	if err != nil {
		r.timer.Stop()
		if r.fired.Load() { // the read failed because the clock cancelled the request
			err = fmt.Errorf("%w (no byte for %s)", errIdle, r.idle)
		}
	}
	return n, err
}
