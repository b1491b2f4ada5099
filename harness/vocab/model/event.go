package model

import (
	"context"
	"encoding/json"
	"time"
)

// Event is one thing that happened on the wire, as the trajectory keeps it: bodies raw, auth
// headers and any echo of the key redacted.
type Event struct {
	// Kind is one of the EventKinds but KindTurn and KindUnsent: it says which other fields
	// are set.
	Kind   EventKind         `json:"kind"`
	URL    string            `json:"url,omitempty"`
	Header map[string]string `json:"header,omitempty"`
	Status int               `json:"status,omitempty"`
	Body   json.RawMessage   `json:"body,omitempty"`
	// BodyBytes and BodySHA256, when set, say Body holds only the beginning of the body, as a
	// JSON string (CutBody): the whole body's length and its sha256, in hex.
	BodyBytes   int64         `json:"body_bytes,omitempty"`
	BodySHA256  string        `json:"body_sha256,omitempty"`
	Attempt     int           `json:"attempt,omitempty"`
	Wait        time.Duration `json:"wait,omitempty"`
	Error       string        `json:"error,omitempty"`
	MaxInFlight int           `json:"max_in_flight,omitempty"` // throttle: the calls now allowed at once
	Reason      string        `json:"reason,omitempty"`        // queued: what the call waits for
}

type recorderKey struct{}

// WithRecorder makes the model calls made with ctx report their wire events to rec: the
// runner gives each episode its own, so one model value can serve a whole run.
func WithRecorder(ctx context.Context, rec func(Event)) context.Context {
	return context.WithValue(ctx, recorderKey{}, rec)
}

// recorderOf is the recorder WithRecorder gave ctx, nil when none.
func recorderOf(ctx context.Context) func(Event) {
	rec, _ := ctx.Value(recorderKey{}).(func(Event))
	return rec
}

// RecordEvent hands e to the recorder ctx carries (WithRecorder), if any: how a model that
// calls no provider, such as a replay, notes its own events.
func RecordEvent(ctx context.Context, e Event) {
	if rec := recorderOf(ctx); rec != nil {
		rec(e)
	}
}
